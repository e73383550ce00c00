import { agentCommand } from '@pullplane/redis-common';
import { type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/**
 * Redis' string commands. Argo CD's cache reads and writes with GET and SET (EX/PX, NX/XX,
 * KEEPTTL); agent keys are served for these and SETEX, PSETEX, MGET.
 */
export const STRING_COMMANDS: readonly CommandSpec[] = [
  { name: 'append', keys: FIRST_KEY },
  { name: 'decr', keys: FIRST_KEY },
  { name: 'decrby', keys: FIRST_KEY },
  // Argo CD's cache (util/cache: go-redis/cache Get, Set with EX/PX and NX/XX/KEEPTTL, Delete).
  { name: 'get', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('get') },
  { name: 'getdel', keys: FIRST_KEY },
  { name: 'getex', keys: FIRST_KEY },
  { name: 'getrange', keys: FIRST_KEY },
  { name: 'getset', keys: FIRST_KEY },
  { name: 'incr', keys: FIRST_KEY },
  { name: 'incrby', keys: FIRST_KEY },
  { name: 'incrbyfloat', keys: FIRST_KEY },
  { name: 'lcs', keys: keyRange(1, 2) },
  { name: 'mget', keys: keyRange(1, -1), policy: 'allowed', agent: agentCommand('mget') },
  { name: 'mset', keys: keyRange(1, -1, 2) },
  { name: 'msetnx', keys: keyRange(1, -1, 2) },
  { name: 'psetex', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('psetex') },
  { name: 'set', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('set') },
  { name: 'setex', keys: FIRST_KEY, policy: 'allowed', agent: agentCommand('setex') },
  { name: 'setnx', keys: FIRST_KEY },
  { name: 'setrange', keys: FIRST_KEY },
  { name: 'strlen', keys: FIRST_KEY },
  { name: 'substr', keys: FIRST_KEY },
];
