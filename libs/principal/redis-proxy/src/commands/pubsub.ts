import { agentCommand } from '@pullplane/redis-common';
import * as answer from '../local-commands.js';
import { type CommandSpec, FIRST_KEY, keyRange, NO_KEYS, plainSubcommands } from './spec.js';

/**
 * Redis' pub/sub commands. Subscriptions are the proxy's own (shared per replica over principal
 * and agent channels); PUBLISH on an agent channel goes to that agent; sharded pub/sub is not
 * served.
 */
export const PUBSUB_COMMANDS: readonly CommandSpec[] = [
  // SUBSCRIBE, PSUBSCRIBE, PUBLISH: change notifications of cached application state and the
  // API server's revoked-token store.
  {
    name: 'psubscribe',
    keys: NO_KEYS,
    policy: 'allowed',
    whileSubscribed: true,
    inMulti: 'refuse',
    local: answer.subscribe,
  },
  { name: 'publish', keys: NO_KEYS, policy: 'allowed', agent: agentCommand('publish') },
  {
    name: 'pubsub',
    keys: NO_KEYS,
    subcommands: plainSubcommands('channels help numpat numsub shardchannels shardnumsub'),
  },
  {
    name: 'punsubscribe',
    keys: NO_KEYS,
    policy: 'allowed',
    whileSubscribed: true,
    inMulti: 'refuse',
    local: answer.unsubscribe,
  },
  { name: 'spublish', keys: FIRST_KEY },
  {
    name: 'ssubscribe',
    keys: keyRange(1, -1),
    policy: 'never',
    whileSubscribed: true,
    local: answer.notSupported('sharded pub/sub'),
  },
  {
    name: 'subscribe',
    keys: NO_KEYS,
    policy: 'allowed',
    whileSubscribed: true,
    inMulti: 'refuse',
    local: answer.subscribe,
  },
  {
    name: 'sunsubscribe',
    keys: keyRange(1, -1),
    policy: 'never',
    whileSubscribed: true,
    local: answer.notSupported('sharded pub/sub'),
  },
  {
    name: 'unsubscribe',
    keys: NO_KEYS,
    policy: 'allowed',
    whileSubscribed: true,
    inMulti: 'refuse',
    local: answer.unsubscribe,
  },
];
