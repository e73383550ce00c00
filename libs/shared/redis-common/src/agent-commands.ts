/**
 * How a command is served for agent keys: the redis proxy routes it to the agent by these
 * rules and the agent runs it on its cluster's Redis by the same ones, so the two sides cannot
 * disagree about which commands cross the tunnel or where their keys are.
 */
export interface AgentCommand {
  /** `first`: one key (or channel) at args[0]; `all`: every argument is a key. */
  readonly keys: 'first' | 'all';
  /** For `all`: how the proxy merges the answers of several destinations (key order, or a sum). */
  readonly merge?: 'mget' | 'sum';
}

/** Every command that may reach an agent's Redis: nothing else runs there. */
export const AGENT_COMMANDS: ReadonlyMap<string, AgentCommand> = new Map<string, AgentCommand>([
  // Argo CD's cache (util/cache: go-redis/cache Get, Set with EX/PX and NX/XX/KEEPTTL, Delete).
  ['get', { keys: 'first' }],
  ['set', { keys: 'first' }],
  ['setex', { keys: 'first' }],
  ['psetex', { keys: 'first' }],
  ['mget', { keys: 'all', merge: 'mget' }],
  ['expire', { keys: 'first' }],
  ['pexpire', { keys: 'first' }],
  ['ttl', { keys: 'first' }],
  ['pttl', { keys: 'first' }],
  ['del', { keys: 'all', merge: 'sum' }],
  ['unlink', { keys: 'all', merge: 'sum' }],
  ['exists', { keys: 'all', merge: 'sum' }],
  // The channel is the "key": Argo CD publishes resource-tree changes per application.
  ['publish', { keys: 'first' }],
]);

/** The agent rules of `name`; a name missing here is a mistake in the caller's table. */
export function agentCommand(name: string): AgentCommand {
  const command = AGENT_COMMANDS.get(name);
  if (!command) throw new Error(`${name} is not served for agent keys`);
  return command;
}
