import { ALL_ARGS, type CommandSpec, FIRST_KEY, plainSubcommands } from './spec.js';

/**
 * Redis' stream commands: principal keys only; XREAD and XREADGROUP may block, so they get the
 * client a principal connection of its own.
 */
export const STREAM_COMMANDS: readonly CommandSpec[] = [
  { name: 'xack', keys: FIRST_KEY },
  { name: 'xadd', keys: FIRST_KEY },
  { name: 'xautoclaim', keys: FIRST_KEY },
  { name: 'xclaim', keys: FIRST_KEY },
  { name: 'xdel', keys: FIRST_KEY },
  {
    name: 'xgroup',
    keys: ALL_ARGS,
    subcommands: plainSubcommands('create createconsumer delconsumer destroy help setid'),
  },
  { name: 'xinfo', keys: ALL_ARGS, subcommands: plainSubcommands('consumers groups help stream') },
  { name: 'xlen', keys: FIRST_KEY },
  { name: 'xpending', keys: FIRST_KEY },
  { name: 'xrange', keys: FIRST_KEY },
  { name: 'xread', keys: ALL_ARGS, ownConnection: true },
  { name: 'xreadgroup', keys: ALL_ARGS, ownConnection: true },
  { name: 'xrevrange', keys: FIRST_KEY },
  { name: 'xsetid', keys: FIRST_KEY },
  { name: 'xtrim', keys: FIRST_KEY },
];
