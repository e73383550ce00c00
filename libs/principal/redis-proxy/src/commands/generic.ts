import { agentCommand } from '@pullplane/redis-common';
import { ALL_ARGS, type CommandSpec, FIRST_KEY, keyRange, NO_KEYS, plainSubcommands } from './spec.js';

/**
 * Redis' generic (keyspace) commands. DEL, UNLINK and EXISTS may mix agent and principal keys:
 * each destination answers its share and the counts are summed.
 */
export const GENERIC_COMMANDS: readonly CommandSpec[] = [
  { name: 'copy', keys: keyRange(1, 2) },
  { name: 'del', keys: keyRange(1, -1), policy: 'allowed', agent: agentCommand('del') },
  { name: 'dump', keys: FIRST_KEY },
  { name: 'exists', keys: keyRange(1, -1), policy: 'allowed', agent: agentCommand('exists') },
  { name: 'expire', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('expire') },
  { name: 'expireat', keys: FIRST_KEY },
  { name: 'expiretime', keys: FIRST_KEY },
  { name: 'keys', keys: NO_KEYS },
  { name: 'migrate', keys: ALL_ARGS },
  { name: 'move', keys: FIRST_KEY },
  { name: 'object', keys: ALL_ARGS, subcommands: plainSubcommands('encoding freq help idletime refcount') },
  { name: 'persist', keys: FIRST_KEY },
  { name: 'pexpire', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('pexpire') },
  { name: 'pexpireat', keys: FIRST_KEY },
  { name: 'pexpiretime', keys: FIRST_KEY },
  { name: 'pttl', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('pttl') },
  { name: 'randomkey', keys: NO_KEYS },
  // The repo server's RenameItem.
  { name: 'rename', keys: keyRange(1, 2), policy: 'allowed' },
  { name: 'renamenx', keys: keyRange(1, 2) },
  { name: 'restore', keys: FIRST_KEY },
  // The API server's revoked-token store (SCAN MATCH revoked-token|*).
  { name: 'scan', keys: NO_KEYS, policy: 'allowed' },
  { name: 'sort', keys: ALL_ARGS },
  { name: 'sort_ro', keys: ALL_ARGS },
  { name: 'touch', keys: keyRange(1, -1) },
  { name: 'ttl', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('ttl') },
  { name: 'type', keys: FIRST_KEY },
  { name: 'unlink', keys: keyRange(1, -1), policy: 'allowed', agent: agentCommand('unlink') },
  { name: 'wait', keys: NO_KEYS, ownConnection: true },
  { name: 'waitaof', keys: ALL_ARGS, ownConnection: true },
];
