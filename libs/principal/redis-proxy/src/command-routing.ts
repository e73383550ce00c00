import { type AgentRouting, ALL_ARGS, isMultiKey, type KeySpec, someKey } from './commands/spec.js';
import { AGENT_COMMAND_NAMES, COMMANDS } from './commands/table.js';
import { ReplyText } from './errors.js';
import type { KeyRoute, KeyRouter } from './key-routing.js';

type Merge = NonNullable<AgentRouting['merge']>;

/** What routing needs of a command: where its keys are, and whether agents serve it. */
export interface RoutedCommand {
  readonly keys: KeySpec;
  readonly agent?: AgentRouting | undefined;
}

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
  return routeOf(COMMANDS.get(name), name, args, keys);
}

/** routeCommand for a command already looked up (undefined: a name the table does not know). */
export function routeOf(
  command: RoutedCommand | undefined,
  name: string,
  args: readonly Buffer[],
  keys: KeyRouter,
): CommandRoute {
  const agent = command?.agent;
  if (agent !== undefined && args.length > 0) {
    if (agent.keys === 'first') return single(keys.route(args[0]!));
    return routeAllKeys(args, keys, agent.merge!);
  }
  let found: KeyRoute | undefined;
  const spec = command?.keys ?? ALL_ARGS;
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
    message: isMultiKey(spec)
      ? ReplyText.spansAgentKey(name, AGENT_COMMAND_NAMES)
      : ReplyText.unsupportedForAgentKey(name),
  };
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
