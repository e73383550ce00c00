import { ALL_ARGS, type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/**
 * Redis' sorted-set commands: principal keys only; the blocking pops get the client a principal
 * connection of its own.
 */
export const SORTED_SET_COMMANDS: readonly CommandSpec[] = [
  { name: 'bzmpop', keys: ALL_ARGS, ownConnection: true },
  { name: 'bzpopmax', keys: keyRange(1, -2), ownConnection: true },
  { name: 'bzpopmin', keys: keyRange(1, -2), ownConnection: true },
  { name: 'zadd', keys: FIRST_KEY },
  { name: 'zcard', keys: FIRST_KEY },
  { name: 'zcount', keys: FIRST_KEY },
  { name: 'zdiff', keys: ALL_ARGS },
  { name: 'zdiffstore', keys: ALL_ARGS },
  { name: 'zincrby', keys: FIRST_KEY },
  { name: 'zinter', keys: ALL_ARGS },
  { name: 'zintercard', keys: ALL_ARGS },
  { name: 'zinterstore', keys: ALL_ARGS },
  { name: 'zlexcount', keys: FIRST_KEY },
  { name: 'zmpop', keys: ALL_ARGS },
  { name: 'zmscore', keys: FIRST_KEY },
  { name: 'zpopmax', keys: FIRST_KEY },
  { name: 'zpopmin', keys: FIRST_KEY },
  { name: 'zrandmember', keys: FIRST_KEY },
  { name: 'zrange', keys: FIRST_KEY },
  { name: 'zrangebylex', keys: FIRST_KEY },
  { name: 'zrangebyscore', keys: FIRST_KEY },
  { name: 'zrangestore', keys: keyRange(1, 2) },
  { name: 'zrank', keys: FIRST_KEY },
  { name: 'zrem', keys: FIRST_KEY },
  { name: 'zremrangebylex', keys: FIRST_KEY },
  { name: 'zremrangebyrank', keys: FIRST_KEY },
  { name: 'zremrangebyscore', keys: FIRST_KEY },
  { name: 'zrevrange', keys: FIRST_KEY },
  { name: 'zrevrangebylex', keys: FIRST_KEY },
  { name: 'zrevrangebyscore', keys: FIRST_KEY },
  { name: 'zrevrank', keys: FIRST_KEY },
  { name: 'zscan', keys: FIRST_KEY },
  { name: 'zscore', keys: FIRST_KEY },
  { name: 'zunion', keys: ALL_ARGS },
  { name: 'zunionstore', keys: ALL_ARGS },
];
