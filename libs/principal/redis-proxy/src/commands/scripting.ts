import { ALL_ARGS, type CommandSpec, NO_KEYS, plainSubcommands } from './spec.js';

/**
 * Redis' scripting and function commands: refused unless an operator allows them; their keys move,
 * so every argument is checked for agent keys.
 */
export const SCRIPTING_COMMANDS: readonly CommandSpec[] = [
  { name: 'eval', keys: ALL_ARGS },
  { name: 'eval_ro', keys: ALL_ARGS },
  { name: 'evalsha', keys: ALL_ARGS },
  { name: 'evalsha_ro', keys: ALL_ARGS },
  { name: 'fcall', keys: ALL_ARGS },
  { name: 'fcall_ro', keys: ALL_ARGS },
  {
    name: 'function',
    keys: NO_KEYS,
    subcommands: plainSubcommands('delete dump flush help kill list load restore stats'),
  },
  { name: 'script', keys: NO_KEYS, subcommands: plainSubcommands('debug exists flush help kill load') },
];
