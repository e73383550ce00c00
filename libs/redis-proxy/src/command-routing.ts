import { isMultiKey, keySpec, someKey } from './command-keys.js';
import { ReplyText } from './errors.js';
import type { KeyRoute, KeyRouter } from './key-routing.js';

/** How an agent-capable command is split when its keys live in several places. */
type Merge = 'mget' | 'sum';

interface AgentCommand {
  /** `first`: one key (or channel) at args[0]; `all`: every argument is a key. */
  keys: 'first' | 'all';
  merge?: Merge;
}

/** The commands served for agent keys: what Argo CD uses, plus the obvious housekeeping. */
const AGENT_COMMANDS = new Map<string, AgentCommand>([
  ['get', { keys: 'first' }],
  ['set', { keys: 'first' }],
  ['setex', { keys: 'first' }],
  ['psetex', { keys: 'first' }],
  ['expire', { keys: 'first' }],
  ['pexpire', { keys: 'first' }],
  ['ttl', { keys: 'first' }],
  ['pttl', { keys: 'first' }],
  ['publish', { keys: 'first' }],
  ['del', { keys: 'all', merge: 'sum' }],
  ['unlink', { keys: 'all', merge: 'sum' }],
  ['exists', { keys: 'all', merge: 'sum' }],
  ['mget', { keys: 'all', merge: 'mget' }],
]);
/** The names of the commands served for agent keys (lower case). */
export const AGENT_COMMAND_NAMES: readonly string[] = [...AGENT_COMMANDS.keys()];

/** One destination's share of a split command: `agent` undefined means the principal. */
export interface SplitPart {
  agent: string | undefined;
  /** Indexes into the command's arguments (the keys) this destination answers. */
  indexes: number[];
}

export type CommandRoute =
  | { readonly kind: 'principal' }
  | { readonly kind: 'agent'; readonly agent: string }
  | { readonly kind: 'split'; readonly merge: Merge; readonly parts: SplitPart[] }
  | { readonly kind: 'refused'; readonly message: string };

const PRINCIPAL: CommandRoute = { kind: 'principal' };

function single(route: KeyRoute): CommandRoute {
  if (route.kind === 'principal') return PRINCIPAL;
  if (route.kind === 'invalid') return { kind: 'refused', message: ReplyText.invalidAgentKey(route.reason) };
  return { kind: 'agent', agent: route.agent };
}

/**
 * Where a (non-local) command goes. `name` is lower-case, `args` excludes it. Commands the
 * proxy cannot serve for agent keys are refused rather than sent to the principal Redis,
 * which would answer from the wrong data.
 */
export function routeCommand(name: string, args: readonly Buffer[], keys: KeyRouter): CommandRoute {
  const agentCommand = AGENT_COMMANDS.get(name);
  if (agentCommand !== undefined && args.length > 0) {
    if (agentCommand.keys === 'first') return single(keys.route(args[0]!));
    return routeAllKeys(args, keys, agentCommand.merge!);
  }
  let found: KeyRoute | undefined;
  const spec = keySpec(name);
  someKey(spec, args, (i) => {
    const r = keys.route(args[i]!);
    if (r.kind === 'principal') return false;
    found = r;
    return true;
  });
  if (found === undefined) return PRINCIPAL;
  if (found.kind === 'invalid') return { kind: 'refused', message: ReplyText.invalidAgentKey(found.reason) };
  return {
    kind: 'refused',
    message: isMultiKey(spec) ? ReplyText.spansAgentKey(name) : ReplyText.unsupportedForAgentKey(name),
  };
}

/** True when any key argument of the command routes to an agent (or is refused). */
export function touchesAgentKey(name: string, args: readonly Buffer[], keys: KeyRouter): boolean {
  return routeCommand(name, args, keys).kind !== 'principal';
}

function routeAllKeys(args: readonly Buffer[], keys: KeyRouter, merge: Merge): CommandRoute {
  const first = keys.route(args[0]!);
  if (first.kind === 'invalid') return single(first);
  const firstAgent = first.kind === 'agent' ? first.agent : undefined;
  let parts: Map<string | undefined, SplitPart> | undefined;
  for (let i = 1; i < args.length; i++) {
    const r = keys.route(args[i]!);
    if (r.kind === 'invalid') return single(r);
    const agent = r.kind === 'agent' ? r.agent : undefined;
    if (parts === undefined) {
      if (agent === firstAgent) continue;
      // First key elsewhere: everything before it went to the first key's destination.
      parts = new Map([[firstAgent, { agent: firstAgent, indexes: Array.from({ length: i }, (_, j) => j) }]]);
    }
    let part = parts.get(agent);
    if (part === undefined) {
      part = { agent, indexes: [] };
      parts.set(agent, part);
    }
    part.indexes.push(i);
  }
  if (parts === undefined) return firstAgent === undefined ? PRINCIPAL : { kind: 'agent', agent: firstAgent };
  return { kind: 'split', merge, parts: [...parts.values()] };
}
