import { isDnsLabelBytes } from '@pullplane/names';
import { PIPE, UNDERSCORE } from '@pullplane/redis-common';
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
const GLOB = /[*?[\]\\]/;

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
      if (!isDnsLabelBytes(key, n, us)) {
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
