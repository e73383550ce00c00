import { type CommandSpec, NO_KEYS, plainSubcommands } from './spec.js';

/** Redis' cluster commands: the principal Redis is standalone for the proxy's clients. */
export const CLUSTER_COMMANDS: readonly CommandSpec[] = [
  { name: 'asking', keys: NO_KEYS },
  {
    name: 'cluster',
    keys: NO_KEYS,
    subcommands: plainSubcommands(
      'addslots addslotsrange bumpepoch count-failure-reports countkeysinslot delslots delslotsrange',
      'failover flushslots forget getkeysinslot help info keyslot links meet myid nodes replicas',
      'replicate reset saveconfig set-config-epoch setslot shards slaves slots',
    ),
  },
  { name: 'readonly', keys: NO_KEYS, ownConnection: true },
  { name: 'readwrite', keys: NO_KEYS, ownConnection: true },
];
