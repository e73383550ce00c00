import * as answer from '../local-commands.js';
import {
  type CommandSpec,
  NO_KEYS,
  plainSubcommands,
  relaySubcommands,
  type SubcommandSpec,
} from './spec.js';

/**
 * CLIENT: the subcommands carrying state the proxy owns are answered here; the rest reach the
 * principal Redis on the client's own connection.
 */
const CLIENT: Readonly<Record<string, SubcommandSpec>> = {
  ...plainSubcommands('getredir help info kill list no-evict no-touch pause trackinginfo unblock unpause'),
  id: { policy: 'allowed', local: answer.clientId },
  getname: { policy: 'allowed', local: answer.clientGetname },
  setname: { policy: 'allowed', local: answer.clientSetname },
  setinfo: { policy: 'allowed', local: answer.clientSetinfo },
  maint_notifications: { policy: 'allowed', local: answer.clientMaintNotifications },
  // Each changes how many replies follow a command, which the reply order depends on.
  reply: { policy: 'never', local: answer.notSupported('CLIENT REPLY') },
  tracking: { policy: 'never', local: answer.notSupported('CLIENT TRACKING') },
  caching: { policy: 'never', local: answer.notSupported('CLIENT CACHING') },
};

/**
 * Redis' connection commands: the proxy answers the handshake itself (go-redis v9: HELLO 3 with
 * AUTH, then SELECT, CLIENT SETNAME and SETINFO; redis-cli; ioredis' ready check) and replays what
 * changes state on the client's own principal connection.
 */
export const CONNECTION_COMMANDS: readonly CommandSpec[] = [
  { name: 'auth', keys: NO_KEYS, policy: 'allowed', beforeAuth: true, local: answer.auth },
  {
    name: 'client',
    keys: NO_KEYS,
    ownConnection: true,
    relay: relaySubcommands(CLIENT),
    subcommands: CLIENT,
  },
  { name: 'echo', keys: NO_KEYS, policy: 'allowed', local: answer.echo },
  {
    name: 'hello',
    keys: NO_KEYS,
    policy: 'allowed',
    beforeAuth: true,
    waitsForPrincipal: true,
    local: answer.hello,
  },
  {
    name: 'ping',
    keys: NO_KEYS,
    policy: 'allowed',
    beforeAuth: true,
    whileSubscribed: true,
    local: answer.ping,
  },
  {
    name: 'quit',
    keys: NO_KEYS,
    policy: 'allowed',
    beforeAuth: true,
    whileSubscribed: true,
    inMulti: 'run',
    local: answer.quit,
  },
  {
    name: 'reset',
    keys: NO_KEYS,
    policy: 'allowed',
    whileSubscribed: true,
    waitsForPrincipal: true,
    inMulti: 'run',
    local: answer.reset,
  },
  { name: 'select', keys: NO_KEYS, policy: 'allowed', ownConnection: true, relay: answer.select },
];
