import { type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/** Redis' bitmap commands: principal keys only. */
export const BITMAP_COMMANDS: readonly CommandSpec[] = [
  { name: 'bitcount', keys: FIRST_KEY },
  { name: 'bitfield', keys: FIRST_KEY },
  { name: 'bitfield_ro', keys: FIRST_KEY },
  { name: 'bitop', keys: keyRange(2, -1) },
  { name: 'bitpos', keys: FIRST_KEY },
  { name: 'getbit', keys: FIRST_KEY },
  { name: 'setbit', keys: FIRST_KEY },
];
