import { isContainerCommand } from './redis-commands.js';

/**
 * What the proxy relays by default: exactly what Argo CD's components send, plus the commands
 * it serves for agent keys (see the README for where each comes from). Everything else —
 * FLUSHALL, CONFIG, ACL, SHUTDOWN, EVAL, KEYS, CLIENT KILL … — is refused unless an operator
 * adds it with --allow-commands. Subcommands are written `name|sub`, as Redis' ACLs do.
 */
export const DEFAULT_ALLOWED_COMMANDS: readonly string[] = [
  // go-redis v9's connection handshake; all but SELECT are answered by the proxy itself.
  'hello',
  'auth',
  'client|setinfo',
  'client|setname',
  'client|getname',
  'client|id',
  'client|maint_notifications',
  'select',
  'ping',
  'echo',
  'quit',
  // Answered by the proxy with what clients check on connect (ioredis' ready check), nothing of the principal's.
  'info',
  'reset',
  // Argo CD's cache (util/cache: go-redis/cache Get, Set with EX/PX and NX/XX/KEEPTTL, Delete),
  // the repo server's RENAME, the API server's revoked-token store (SET, SCAN MATCH, PUBLISH,
  // SUBSCRIBE) and change notifications (PUBLISH, SUBSCRIBE).
  'get',
  'set',
  'del',
  'rename',
  'scan',
  'publish',
  'subscribe',
  'unsubscribe',
  'psubscribe',
  'punsubscribe',
  // The rest of what the proxy serves for agent keys, so principal and agent keys accept the same set.
  'setex',
  'psetex',
  'mget',
  'unlink',
  'exists',
  'expire',
  'pexpire',
  'ttl',
  'pttl',
];

/**
 * Commands that cannot be relayed whatever the configuration: replication and monitoring
 * streams, sharded pub/sub, and CLIENT modes that change how many replies a command gets
 * (the proxy keeps replies in order by counting them).
 */
const NEVER_RELAYED = new Set([
  'monitor',
  'sync',
  'psync',
  'replconf',
  'ssubscribe',
  'sunsubscribe',
  'client|reply',
  'client|tracking',
  'client|caching',
]);

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

/** Longest command name echoed back in a refusal, as Redis truncates unknown command names. */
const MAX_ECHOED = 128;

/** Decides which commands reach the principal Redis. */
export class CommandPolicy {
  private readonly allowed: Set<string>;

  constructor(extra: readonly string[] = []) {
    this.allowed = new Set([...DEFAULT_ALLOWED_COMMANDS, ...extra.map((n) => n.toLowerCase())]);
  }

  /** Every command allowed, defaults first (for the startup log). */
  get list(): string[] {
    return [...this.allowed];
  }

  /**
   * undefined when the command may run; otherwise the name to report (`flushall`,
   * `config|set`). `name` is lower-case; for container commands the subcommand is args[0].
   */
  refusal(name: string, args: readonly Buffer[]): string | undefined {
    if (this.allowed.has(name)) return undefined;
    if (!isContainerCommand(name)) return name.length > MAX_ECHOED ? name.slice(0, MAX_ECHOED) : name;
    const sub = (args[0]?.toString('latin1') ?? '').slice(0, MAX_ECHOED).toLowerCase();
    const full = `${name}|${sub}`;
    return this.allowed.has(full) ? undefined : full;
  }
}
