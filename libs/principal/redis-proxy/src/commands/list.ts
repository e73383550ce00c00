import { ALL_ARGS, type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/**
 * Redis' list commands: principal keys only. The blocking ones hold a connection, so a client
 * sending one gets a principal connection of its own.
 */
export const LIST_COMMANDS: readonly CommandSpec[] = [
  { name: 'blmove', keys: keyRange(1, 2), ownConnection: true },
  { name: 'blmpop', keys: ALL_ARGS, ownConnection: true },
  { name: 'blpop', keys: keyRange(1, -2), ownConnection: true },
  { name: 'brpop', keys: keyRange(1, -2), ownConnection: true },
  { name: 'brpoplpush', keys: keyRange(1, 2), ownConnection: true },
  { name: 'lindex', keys: FIRST_KEY },
  { name: 'linsert', keys: FIRST_KEY },
  { name: 'llen', keys: FIRST_KEY },
  { name: 'lmove', keys: keyRange(1, 2) },
  { name: 'lmpop', keys: ALL_ARGS },
  { name: 'lpop', keys: FIRST_KEY },
  { name: 'lpos', keys: FIRST_KEY },
  { name: 'lpush', keys: FIRST_KEY },
  { name: 'lpushx', keys: FIRST_KEY },
  { name: 'lrange', keys: FIRST_KEY },
  { name: 'lrem', keys: FIRST_KEY },
  { name: 'lset', keys: FIRST_KEY },
  { name: 'ltrim', keys: FIRST_KEY },
  { name: 'rpop', keys: FIRST_KEY },
  { name: 'rpoplpush', keys: keyRange(1, 2) },
  { name: 'rpush', keys: FIRST_KEY },
  { name: 'rpushx', keys: FIRST_KEY },
];
