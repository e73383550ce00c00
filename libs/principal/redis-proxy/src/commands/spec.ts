import type { AgentCommand, PubSubKind } from '@pullplane/redis-common';
import type { RespCommand, RespProtocol, RespValue } from '@pullplane/resp';

/**
 * Where a command carries keys, from Redis 7.0's `COMMAND` table (first key, last key, step;
 * negative last counts from the end, the command name is position 0). `all-args`: every
 * argument is checked, for commands whose keys move (EVAL, SORT, ZUNIONSTORE, XREAD, …),
 * containers whose subcommands take keys (OBJECT, MEMORY, XINFO, XGROUP, DEBUG) and names the
 * table does not know (newer Redis, modules): a conservative rule, so an agent key can never
 * slip through unseen.
 */
export type KeySpec =
  | { readonly kind: 'none' }
  | { readonly kind: 'range'; readonly first: number; readonly last: number; readonly step: number }
  | { readonly kind: 'all-args' };

export const NO_KEYS: KeySpec = { kind: 'none' };
export const FIRST_KEY: KeySpec = { kind: 'range', first: 1, last: 1, step: 1 };
export const ALL_ARGS: KeySpec = { kind: 'all-args' };
export const keyRange = (first: number, last: number, step = 1): KeySpec => ({
  kind: 'range',
  first,
  last,
  step,
});

/**
 * Whether the command reaches the principal Redis: `allowed` by default (what Argo CD's
 * components send, plus what the proxy serves for agent keys), `never` whatever the
 * configuration (it would break the reply order or needs a stream the proxy cannot relay).
 * Absent: refused unless an operator adds it with --allow-commands.
 */
export type Policy = 'allowed' | 'never';

/** How a command is served for agent keys: the rules the agent runs it by (one table for both). */
export type AgentRouting = AgentCommand;

/** The connection state local answers read and change. */
export interface SessionState {
  readonly id: number;
  protocol: RespProtocol;
  authenticated: boolean;
  name: Buffer | undefined;
}

/** What a command answered (or tracked) by the proxy may do with its client connection. */
export interface CommandSession {
  readonly state: SessionState;
  /** Required from clients when set (`--redis-password`). */
  readonly password: string | undefined;
  /** Channels and patterns the connection is subscribed to. */
  readonly subscriptions: number;
  reply(bytes: Buffer): void;
  /** Sends the command to the principal Redis as received; `observe` sees its reply. */
  forward(raw: Buffer | Buffer[], observe?: (value: RespValue) => void): void;
  /** Sends a state change to the client's own principal connection, if it has one (reply dropped). */
  replay(args: ReadonlyArray<string | Buffer>, what: string): void;
  /** The client may have (un)authenticated: its limits and AUTH clock follow. */
  authenticationChanged(): void;
  /** The database the principal Redis selected for this client. */
  selected(db: number): void;
  /** Answers OK and closes once every owed reply is written. */
  quit(): void;
  /** Back to a fresh connection's state (RESET). */
  reset(): void;
  /** MULTI was sent: the following commands are queued. */
  beginTransaction(): void;
  subscribe(kind: PubSubKind, name: string, names: Buffer[]): void;
  unsubscribe(kind: PubSubKind, names: Buffer[]): void;
}

/** A command the proxy handles itself; `raw` is the command's bytes as received. */
export type LocalAnswer = (session: CommandSession, cmd: RespCommand, raw: Buffer | Buffer[]) => void;

/** A subcommand of a container command (`client|id`, `config|set`). */
export interface SubcommandSpec {
  readonly policy?: Policy;
  /** Answered by the proxy (the container's `relay` runs it); it then needs no own connection. */
  readonly local?: LocalAnswer;
}

/** Everything the proxy knows about one Redis command: one entry per command, by group. */
export interface CommandSpec {
  /** Lower-case, as Redis spells it. */
  readonly name: string;
  readonly keys: KeySpec;
  readonly policy?: Policy;
  /** Served for agent keys (the rest of the commands are refused on them). */
  readonly agent?: AgentRouting;
  /** Answered by the proxy itself, never relayed (counted as `route="local"`). */
  readonly local?: LocalAnswer;
  /** Relayed to the principal Redis by a hook that keeps the proxy's view of the connection in step. */
  readonly relay?: LocalAnswer;
  /**
   * Gives the connection state on the principal Redis (database, transaction, watched keys,
   * client settings) or blocks it: from the first one on, the client gets a principal
   * connection of its own.
   */
  readonly ownConnection?: boolean;
  /**
   * Changes which principal connection the client's next commands use (protocol, a fresh
   * state): runs only once the principal owes the client nothing, so order is kept.
   */
  readonly waitsForPrincipal?: boolean;
  /** Served before the client authenticated (`--redis-password`). */
  readonly beforeAuth?: boolean;
  /** Accepted on a RESP2 connection while it is subscribed. */
  readonly whileSubscribed?: boolean;
  /**
   * Inside MULTI: `run` as outside (QUIT, RESET), `refuse` (answered by the proxy outside
   * MULTI, so EXEC would take the principal's answer instead), or by default queued on the
   * principal Redis when its keys are principal keys.
   */
  readonly inMulti?: 'run' | 'refuse';
  /** A container command: what its first argument names means more than the command does. */
  readonly subcommands?: Readonly<Record<string, SubcommandSpec>>;
}

/** Subcommands that need nothing beyond their name (`'get set rewrite'`, in as many strings as fit). */
export function plainSubcommands(...names: string[]): Record<string, SubcommandSpec> {
  return Object.fromEntries(names.flatMap((n) => n.split(' ')).map((n) => [n, {}]));
}

/**
 * A container's `relay`: a subcommand with a local answer is answered here, any other is
 * relayed to the principal Redis as received.
 */
export function relaySubcommands(subs: Readonly<Record<string, SubcommandSpec>>): LocalAnswer {
  const answers = new Map<string, LocalAnswer>();
  for (const [name, sub] of Object.entries(subs)) if (sub.local !== undefined) answers.set(name, sub.local);
  return (session, cmd, raw) => {
    const answer = answers.get(cmd.args[0]?.toString('latin1').toLowerCase() ?? '');
    if (answer !== undefined) answer(session, cmd, raw);
    else session.forward(raw);
  };
}

/**
 * Calls `visit` with the index (into `args`, which excludes the command name) of every key
 * argument, stopping when it returns true. Returns whether it stopped.
 */
export function someKey(spec: KeySpec, args: readonly Buffer[], visit: (index: number) => boolean): boolean {
  if (spec.kind === 'none') return false;
  if (spec.kind === 'all-args') {
    for (let i = 0; i < args.length; i++) if (visit(i)) return true;
    return false;
  }
  // Positions count the command name as 0, as in COMMAND's output.
  const argc = args.length + 1;
  const last = spec.last < 0 ? argc + spec.last : spec.last;
  for (let pos = spec.first; pos <= last && pos < argc; pos += spec.step) if (visit(pos - 1)) return true;
  return false;
}

/** True when the command can name more than one key (its error then says "cannot span"). */
export function isMultiKey(spec: KeySpec): boolean {
  return spec.kind === 'all-args' || (spec.kind === 'range' && spec.last !== spec.first);
}
