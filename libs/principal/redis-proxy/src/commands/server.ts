import * as answer from '../local-commands.js';
import { ALL_ARGS, type CommandSpec, FIRST_KEY, NO_KEYS, plainSubcommands } from './spec.js';

/**
 * Redis' server commands: administrative, refused unless an operator allows them; INFO is answered
 * by the proxy, replication and MONITOR streams are never relayed.
 */
export const SERVER_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'acl',
    keys: NO_KEYS,
    subcommands: plainSubcommands(
      'cat deluser dryrun genpass getuser help list load log save setuser users whoami',
    ),
  },
  { name: 'bgrewriteaof', keys: NO_KEYS },
  { name: 'bgsave', keys: NO_KEYS },
  {
    name: 'command',
    keys: NO_KEYS,
    subcommands: plainSubcommands('count docs getkeys getkeysandflags help info list'),
  },
  { name: 'config', keys: NO_KEYS, subcommands: plainSubcommands('get help resetstat rewrite set') },
  { name: 'dbsize', keys: NO_KEYS },
  { name: 'debug', keys: ALL_ARGS },
  { name: 'failover', keys: NO_KEYS },
  { name: 'flushall', keys: NO_KEYS },
  { name: 'flushdb', keys: NO_KEYS },
  { name: 'info', keys: NO_KEYS, policy: 'allowed', inMulti: 'refuse', local: answer.info },
  { name: 'lastsave', keys: NO_KEYS },
  {
    name: 'latency',
    keys: NO_KEYS,
    subcommands: plainSubcommands('doctor graph help histogram history latest reset'),
  },
  { name: 'lolwut', keys: NO_KEYS },
  {
    name: 'memory',
    keys: ALL_ARGS,
    subcommands: plainSubcommands('doctor help malloc-stats purge stats usage'),
  },
  { name: 'module', keys: NO_KEYS, subcommands: plainSubcommands('help list load loadex unload') },
  { name: 'monitor', keys: NO_KEYS, policy: 'never', local: answer.notSupported() },
  { name: 'psync', keys: NO_KEYS, policy: 'never', local: answer.notSupported() },
  { name: 'replconf', keys: NO_KEYS, policy: 'never' },
  { name: 'replicaof', keys: NO_KEYS },
  { name: 'restore-asking', keys: FIRST_KEY },
  { name: 'role', keys: NO_KEYS },
  { name: 'save', keys: NO_KEYS },
  { name: 'shutdown', keys: NO_KEYS },
  { name: 'slaveof', keys: NO_KEYS },
  { name: 'slowlog', keys: NO_KEYS, subcommands: plainSubcommands('get help len reset') },
  { name: 'swapdb', keys: NO_KEYS },
  { name: 'sync', keys: NO_KEYS, policy: 'never', local: answer.notSupported() },
  { name: 'time', keys: NO_KEYS },
];
