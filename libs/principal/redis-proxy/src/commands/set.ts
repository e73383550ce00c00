import { ALL_ARGS, type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/** Redis' set commands: principal keys only. */
export const SET_COMMANDS: readonly CommandSpec[] = [
  { name: 'sadd', keys: FIRST_KEY },
  { name: 'scard', keys: FIRST_KEY },
  { name: 'sdiff', keys: keyRange(1, -1) },
  { name: 'sdiffstore', keys: keyRange(1, -1) },
  { name: 'sinter', keys: keyRange(1, -1) },
  { name: 'sintercard', keys: ALL_ARGS },
  { name: 'sinterstore', keys: keyRange(1, -1) },
  { name: 'sismember', keys: FIRST_KEY },
  { name: 'smembers', keys: FIRST_KEY },
  { name: 'smismember', keys: FIRST_KEY },
  { name: 'smove', keys: keyRange(1, 2) },
  { name: 'spop', keys: FIRST_KEY },
  { name: 'srandmember', keys: FIRST_KEY },
  { name: 'srem', keys: FIRST_KEY },
  { name: 'sscan', keys: FIRST_KEY },
  { name: 'sunion', keys: keyRange(1, -1) },
  { name: 'sunionstore', keys: keyRange(1, -1) },
];
