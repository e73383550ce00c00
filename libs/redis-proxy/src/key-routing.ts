import { RedisProxyError, RedisProxyErrorCode } from './errors.js';

/** Argo CD's per-application live-state caches, which live in each agent's own Redis. */
export const DEFAULT_AGENT_KEY_PREFIXES: readonly string[] = [
  'app|managed-resources|',
  'app|resources-tree|',
];

export type KeyRoute =
  | { readonly kind: 'principal' }
  | {
      readonly kind: 'agent';
      readonly agent: string;
      /** Bytes before the agent name: where `<agent>_` is cut out, and put back. */
      readonly prefixLength: number;
    }
  | { readonly kind: 'invalid'; readonly reason: string };

const PRINCIPAL: KeyRoute = { kind: 'principal' };
const PIPE = 0x7c;
const UNDERSCORE = 0x5f;
const GLOB = /[*?[\]\\]/;

/** RFC 1123 label: 1-63 of [a-z0-9-], starting and ending alphanumeric (agent names are). */
export function isDnsLabel(b: Buffer, start = 0, end = b.length): boolean {
  const n = end - start;
  if (n < 1 || n > 63) return false;
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    const alnum = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
    if (!alnum && (c !== 0x2d || i === start || i === end - 1)) return false;
  }
  return true;
}

/**
 * Checks a prefix list. Prefixes end with `|` and hold no `_` and no glob characters, so that
 * in a routed key the first `_` always ends the agent name right after the prefix: the agent
 * finds the same cut without knowing the list, and pattern subscriptions match literally.
 */
export function validateKeyPrefixes(prefixes: readonly string[]): string[] {
  const problems: string[] = [];
  if (prefixes.length === 0) problems.push('at least one agent key prefix is needed');
  for (const p of prefixes) {
    if (!p.endsWith('|') || p.length < 2)
      problems.push(`agent key prefix ${JSON.stringify(p)} must end with '|'`);
    if (p.includes('_')) problems.push(`agent key prefix ${JSON.stringify(p)} must not contain '_'`);
    if (GLOB.test(p)) problems.push(`agent key prefix ${JSON.stringify(p)} must not contain * ? [ ] or \\`);
    if (/[\r\n\s]/.test(p))
      problems.push(`agent key prefix ${JSON.stringify(p)} must not contain whitespace`);
  }
  return problems;
}

/**
 * Decides where a key (or channel, or channel pattern) lives. The rule, in full:
 * - a key that starts with one of the prefixes and whose next `|`-field contains `_` is an
 *   agent key; the agent is the part of that field before the first `_`, and it must be a DNS
 *   label, or the key is refused (`invalid`), never routed anywhere;
 * - a key that starts with a prefix but whose field has no `_` (an application in the control
 *   plane's own namespace) and every other key belong to the principal Redis, unchanged.
 */
export class KeyRouter {
  private readonly prefixes: Buffer[];
  /** First bytes of the prefixes: most keys are rejected on one byte compare. */
  private readonly firstBytes = new Set<number>();

  constructor(prefixes: readonly string[] = DEFAULT_AGENT_KEY_PREFIXES) {
    const problems = validateKeyPrefixes(prefixes);
    if (problems.length > 0)
      throw new RedisProxyError(RedisProxyErrorCode.INVALID_KEY_PREFIX, problems.join('; '));
    this.prefixes = prefixes.map((p) => Buffer.from(p, 'utf8'));
    for (const p of this.prefixes) this.firstBytes.add(p[0]!);
  }

  route(key: Buffer): KeyRoute {
    if (key.length === 0 || !this.firstBytes.has(key[0]!)) return PRINCIPAL;
    for (const p of this.prefixes) {
      const n = p.length;
      if (key.length <= n || key.compare(p, 0, n, 0, n) !== 0) continue;
      let fieldEnd = key.indexOf(PIPE, n);
      if (fieldEnd === -1) fieldEnd = key.length;
      const us = key.indexOf(UNDERSCORE, n);
      if (us === -1 || us >= fieldEnd) return PRINCIPAL;
      if (!isDnsLabel(key, n, us)) {
        return {
          kind: 'invalid',
          reason: `the agent name before '_' after ${p.toString()} must be a DNS label (lower-case letters, digits, '-')`,
        };
      }
      return { kind: 'agent', agent: key.toString('latin1', n, us), prefixLength: n };
    }
    return PRINCIPAL;
  }
}

export interface LocalName {
  agent: string;
  /** The name with `<agent>_` cut out: what the agent's own Redis knows. */
  local: Buffer;
  prefixLength: number;
}

/**
 * The agent's side of the rule, which needs no prefix list: the first `_` ends the agent name,
 * which starts after the last `|` before it. Returns a reason string when the name has no
 * agent part, or names an agent other than `self` (when the agent knows its name).
 */
export function toLocalName(name: Buffer, self: string | undefined): LocalName | string {
  const us = name.indexOf(UNDERSCORE);
  if (us === -1) return 'no <agent>_ part';
  const pipe = name.lastIndexOf(PIPE, us);
  if (pipe === -1) return 'no <agent>_ part after a |-separated prefix';
  if (!isDnsLabel(name, pipe + 1, us)) return 'the agent part is not a DNS label';
  const agent = name.toString('latin1', pipe + 1, us);
  if (self !== undefined && agent !== self) return `it belongs to agent ${agent}`;
  const local = Buffer.concat([name.subarray(0, pipe + 1), name.subarray(us + 1)]);
  return { agent, local, prefixLength: pipe + 1 };
}

/** The inverse of the cut: a local channel name as the client knows it. */
export function toClientName(local: Buffer, prefixLength: number, agent: string): Buffer {
  return Buffer.concat([
    local.subarray(0, prefixLength),
    Buffer.from(`${agent}_`, 'latin1'),
    local.subarray(prefixLength),
  ]);
}
