import { BITMAP_COMMANDS } from './bitmap.js';
import { CLUSTER_COMMANDS } from './cluster.js';
import { CONNECTION_COMMANDS } from './connection.js';
import { GENERIC_COMMANDS } from './generic.js';
import { GEO_COMMANDS } from './geo.js';
import { HASH_COMMANDS } from './hash.js';
import { HYPERLOGLOG_COMMANDS } from './hyperloglog.js';
import { LIST_COMMANDS } from './list.js';
import { PUBSUB_COMMANDS } from './pubsub.js';
import { SCRIPTING_COMMANDS } from './scripting.js';
import { SERVER_COMMANDS } from './server.js';
import { SET_COMMANDS } from './set.js';
import { SORTED_SET_COMMANDS } from './sorted-set.js';
import {
  type AgentRouting,
  ALL_ARGS,
  type CommandSpec,
  type KeySpec,
  type LocalAnswer,
  type SubcommandSpec,
} from './spec.js';
import { STREAM_COMMANDS } from './stream.js';
import { STRING_COMMANDS } from './string.js';
import { TRANSACTIONS_COMMANDS } from './transactions.js';

/**
 * Every Redis command the proxy knows (Redis 7.0's `COMMAND LIST`, plus what 7.2–8.0 added that
 * clients such as go-redis send), one entry each, by Redis' command groups. Every lookup the proxy
 * makes about a command is derived from here.
 */
export const COMMANDS: ReadonlyMap<string, CommandSpec> = index([
  CONNECTION_COMMANDS,
  STRING_COMMANDS,
  GENERIC_COMMANDS,
  PUBSUB_COMMANDS,
  TRANSACTIONS_COMMANDS,
  SERVER_COMMANDS,
  HASH_COMMANDS,
  LIST_COMMANDS,
  SET_COMMANDS,
  SORTED_SET_COMMANDS,
  STREAM_COMMANDS,
  SCRIPTING_COMMANDS,
  CLUSTER_COMMANDS,
  GEO_COMMANDS,
  HYPERLOGLOG_COMMANDS,
  BITMAP_COMMANDS,
]);

function index(groups: ReadonlyArray<readonly CommandSpec[]>): Map<string, CommandSpec> {
  const map = new Map<string, CommandSpec>();
  for (const group of groups)
    for (const spec of group) {
      if (map.has(spec.name)) throw new Error(`redis command '${spec.name}' is in the command table twice`);
      map.set(spec.name, spec);
    }
  return map;
}

/** `name` and `name|sub` for every command and subcommand, in table order. */
function* everyName(): Generator<[string, CommandSpec | SubcommandSpec]> {
  for (const spec of COMMANDS.values()) {
    yield [spec.name, spec];
    for (const [sub, s] of Object.entries(spec.subcommands ?? {})) yield [`${spec.name}|${sub}`, s];
  }
}

const KNOWN = new Set<string>();
const NEVER_RELAYED = new Set<string>();
const defaults: string[] = [];
for (const [name, spec] of everyName()) {
  KNOWN.add(name);
  if (spec.policy === 'never') NEVER_RELAYED.add(name);
  if (spec.policy === 'allowed') defaults.push(name);
}

/**
 * What the proxy relays by default: exactly what Argo CD's components send, plus the commands it
 * serves for agent keys. Everything else is refused unless an operator adds it with --allow-
 * commands. Subcommands are written `name|sub`, as Redis' ACLs do.
 */
export const DEFAULT_ALLOWED_COMMANDS: readonly string[] = defaults;

/** The commands served for agent keys, upper case (for replies that list them). */
export const AGENT_COMMAND_NAMES: readonly string[] = [...COMMANDS.values()]
  .filter((c) => c.agent !== undefined)
  .map((c) => c.name.toUpperCase());

/**
 * A bounded metric label for a command (`get`, `config|set`), `unknown` for names Redis does not have.
 */
export function commandLabel(name: string): string {
  return KNOWN.has(name) ? name : 'unknown';
}

const NAME = /^[a-z0-9][a-z0-9._-]*(\|[a-z0-9][a-z0-9._-]*)?$/;

/** Problems with a --allow-commands list (empty when it is fine). */
export function validateAllowedCommands(names: readonly string[]): string[] {
  const problems: string[] = [];
  for (const raw of names) {
    const name = raw.toLowerCase();
    if (!NAME.test(name)) problems.push(`'${raw}' is not a command name (name or name|subcommand)`);
    else if (NEVER_RELAYED.has(name)) problems.push(`'${raw}' cannot be relayed through the redis proxy`);
  }
  return problems;
}

/**
 * One command as a client connection uses it: the table's entry with every field present (one
 * object shape for all, so the per-command reads stay monomorphic) and the allow-list of this
 * proxy applied.
 */
export interface Command {
  readonly name: string;
  readonly keys: KeySpec;
  readonly agent: AgentRouting | undefined;
  readonly local: LocalAnswer | undefined;
  readonly relay: LocalAnswer | undefined;
  readonly ownConnection: boolean;
  readonly waitsForPrincipal: boolean;
  readonly beforeAuth: boolean;
  readonly whileSubscribed: boolean;
  readonly inMulti: 'queue' | 'run' | 'refuse';
  /** Relayed whole: on the default allow-list or added by an operator. */
  readonly allowed: boolean;
  /** A container's subcommands that are allowed; undefined for other commands. */
  readonly allowedSubcommands: ReadonlySet<string> | undefined;
  /** A container's subcommands the proxy answers itself (they need no own connection). */
  readonly localSubcommands: ReadonlySet<string> | undefined;
}

function resolve(spec: CommandSpec, allowed: ReadonlySet<string>): Command {
  const subs = spec.subcommands === undefined ? undefined : Object.entries(spec.subcommands);
  return {
    name: spec.name,
    keys: spec.keys,
    agent: spec.agent,
    local: spec.local,
    relay: spec.relay,
    ownConnection: spec.ownConnection === true,
    waitsForPrincipal: spec.waitsForPrincipal === true,
    beforeAuth: spec.beforeAuth === true,
    whileSubscribed: spec.whileSubscribed === true,
    inMulti: spec.inMulti ?? 'queue',
    allowed: allowed.has(spec.name),
    allowedSubcommands:
      subs === undefined
        ? undefined
        : new Set(
            [...allowed]
              .filter((n) => n.startsWith(`${spec.name}|`))
              .map((n) => n.slice(spec.name.length + 1)),
          ),
    localSubcommands:
      subs === undefined ? undefined : new Set(subs.filter(([, s]) => s.local).map(([name]) => name)),
  };
}

/** Longest command name echoed back in a refusal, as Redis truncates unknown command names. */
const MAX_ECHOED = 128;

/**
 * The command table with one proxy's allow-list applied (the defaults plus --allow-commands):
 * a connection looks each command up once, and everything it asks of it is a field.
 */
export class CommandBook {
  /** Every command allowed, defaults first (for the startup log). */
  readonly allowed: readonly string[];
  private readonly commands = new Map<string, Command>();

  constructor(extra: readonly string[] = []) {
    const allowed = new Set([...DEFAULT_ALLOWED_COMMANDS, ...extra.map((n) => n.toLowerCase())]);
    this.allowed = [...allowed];
    for (const spec of COMMANDS.values()) this.commands.set(spec.name, resolve(spec, allowed));
    // Names the table does not know (module commands, newer Redis) that an operator allowed:
    // relayed, every argument checked for agent keys.
    for (const name of allowed)
      if (!name.includes('|') && !this.commands.has(name))
        this.commands.set(name, resolve({ name, keys: ALL_ARGS }, allowed));
  }

  /** The command named `name` (lower case); undefined for names neither Redis nor the operator has. */
  get(name: string): Command | undefined {
    return this.commands.get(name);
  }

  /**
   * undefined when the command may reach the principal Redis; otherwise the name to report
   * (`flushall`, `config|set`). For container commands the subcommand is args[0].
   */
  refusal(command: Command | undefined, name: string, args: readonly Buffer[]): string | undefined {
    if (command?.allowed) return undefined;
    const subs = command?.allowedSubcommands;
    if (subs === undefined) return name.length > MAX_ECHOED ? name.slice(0, MAX_ECHOED) : name;
    const sub = (args[0]?.toString('latin1') ?? '').slice(0, MAX_ECHOED).toLowerCase();
    return subs.has(sub) ? undefined : `${name}|${sub}`;
  }
}

/** Whether the command needs the client's own principal connection (see CommandSpec.ownConnection). */
export function needsOwnConnection(command: Command | undefined, args: readonly Buffer[]): boolean {
  if (command === undefined || !command.ownConnection) return false;
  const local = command.localSubcommands;
  // A subcommand the proxy answers (CLIENT ID, SETNAME…) never reaches the server.
  return local === undefined || !local.has(args[0]?.toString('latin1').toLowerCase() ?? '');
}
