import { type CommandSpec, FIRST_KEY, keyRange, NO_KEYS } from './spec.js';

/** Redis' HyperLogLog commands: principal keys only. */
export const HYPERLOGLOG_COMMANDS: readonly CommandSpec[] = [
  { name: 'pfadd', keys: FIRST_KEY },
  { name: 'pfcount', keys: keyRange(1, -1) },
  { name: 'pfdebug', keys: keyRange(2, 2) },
  { name: 'pfmerge', keys: keyRange(1, -1) },
  { name: 'pfselftest', keys: NO_KEYS },
];
