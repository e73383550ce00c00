import { createHash, timingSafeEqual } from 'node:crypto';
import {
  bulkReply,
  encode,
  errorReply,
  integerReply,
  nullBulk,
  type RespProtocol,
  resp,
  simpleString,
} from '@pullplane/resp';
import { ReplyText } from './errors.js';

/** What the proxy reports as its Redis version in HELLO (go-redis and redis-cli only log it). */
export const REPORTED_REDIS_VERSION = '7.0.0';

/** The connection state local commands read and change. */
export interface SessionState {
  readonly id: number;
  protocol: RespProtocol;
  authenticated: boolean;
  name: Buffer | undefined;
}

const digest = (b: Buffer | string) => createHash('sha256').update(b).digest();

/** Constant-time password check (the default user only, as with `requirepass`). */
export function checkPassword(
  configured: string | undefined,
  user: Buffer | undefined,
  given: Buffer,
): 'ok' | 'wrong' | 'unset' {
  if (user !== undefined && user.toString('latin1') !== 'default') return 'wrong';
  if (configured === undefined || configured === '') return user === undefined ? 'unset' : 'ok';
  return timingSafeEqual(digest(configured), digest(given)) ? 'ok' : 'wrong';
}

export function auth(args: Buffer[], state: SessionState, password: string | undefined): Buffer {
  if (args.length !== 1 && args.length !== 2) return errorReply(ReplyText.syntax);
  const result = checkPassword(password, args.length === 2 ? args[0] : undefined, args[args.length - 1]!);
  if (result === 'unset') return errorReply(ReplyText.noPasswordConfigured);
  if (result === 'wrong') return errorReply(ReplyText.wrongPass);
  state.authenticated = true;
  return simpleString('OK');
}

/** Redis' rule for client names: printable ASCII, no spaces. */
export function validClientName(name: Buffer): boolean {
  for (const c of name) if (c < 0x21 || c > 0x7e) return false;
  return true;
}

export interface HelloOutcome {
  reply: Buffer;
  /** Set when the protocol changed: the principal connection must follow. */
  protocolChanged?: RespProtocol;
  /** Set when HELLO named the client. */
  nameChanged?: boolean;
}

/** `HELLO [protover [AUTH user pass] [SETNAME name]]`, answered the way Redis does. */
export function hello(args: Buffer[], state: SessionState, password: string | undefined): HelloOutcome {
  let protocol = state.protocol;
  let authArgs: [Buffer, Buffer] | undefined;
  let name: Buffer | undefined;
  if (args.length > 0) {
    const v = args[0]!.toString('latin1');
    if (!/^-?\d+$/.test(v))
      return { reply: errorReply('ERR Protocol version is not an integer or out of range') };
    if (v !== '2' && v !== '3') return { reply: errorReply(ReplyText.noProto) };
    protocol = v === '3' ? 3 : 2;
    for (let i = 1; i < args.length; i++) {
      const opt = args[i]!.toString('latin1').toLowerCase();
      if (opt === 'auth' && i + 2 < args.length) {
        authArgs = [args[i + 1]!, args[i + 2]!];
        i += 2;
      } else if (opt === 'setname' && i + 1 < args.length) {
        name = args[++i]!;
      } else {
        return { reply: errorReply(`ERR Syntax error in HELLO option '${args[i]!.toString('latin1')}'`) };
      }
    }
  }
  if (authArgs !== undefined) {
    if (checkPassword(password, authArgs[0], authArgs[1]) === 'wrong')
      return { reply: errorReply(ReplyText.wrongPass) };
    state.authenticated = true;
  }
  if (!state.authenticated) return { reply: errorReply(ReplyText.helloNoAuth) };
  if (name !== undefined && !validClientName(name)) return { reply: errorReply(ReplyText.badClientName) };
  const outcome: HelloOutcome = { reply: Buffer.alloc(0) };
  if (name !== undefined) {
    state.name = name.length === 0 ? undefined : name;
    outcome.nameChanged = true;
  }
  if (protocol !== state.protocol) outcome.protocolChanged = protocol;
  state.protocol = protocol;
  outcome.reply = encode(
    resp.map([
      [resp.bulk('server'), resp.bulk('redis')],
      [resp.bulk('version'), resp.bulk(REPORTED_REDIS_VERSION)],
      [resp.bulk('proto'), resp.integer(protocol)],
      [resp.bulk('id'), resp.integer(state.id)],
      [resp.bulk('mode'), resp.bulk('standalone')],
      [resp.bulk('role'), resp.bulk('master')],
      [resp.bulk('modules'), resp.array([])],
    ]),
    { protocol },
  );
  return outcome;
}

/** PING: PONG, the argument back, or in RESP2 subscriber mode the ["pong", arg] array. */
export function ping(args: Buffer[], protocol: RespProtocol, subscribed: boolean): Buffer {
  if (args.length > 1) return errorReply(ReplyText.arity('ping'));
  if (subscribed && protocol === 2)
    return encode(resp.array([resp.bulk('pong'), resp.bulk(args[0] ?? Buffer.alloc(0))]), { protocol });
  return args.length === 0 ? simpleString('PONG') : bulkReply(args[0]!, protocol);
}

/**
 * INFO, answered by the proxy: what clients check when they connect (ioredis waits for
 * `loading:0`, tools read the version and role) and nothing of the principal Redis, whose
 * configuration, clients and keyspace are not the business of its cache clients.
 */
export function info(protocol: RespProtocol): Buffer {
  const text = [
    '# Server',
    `redis_version:${REPORTED_REDIS_VERSION}`,
    'redis_mode:standalone',
    '',
    '# Persistence',
    'loading:0',
    '',
    '# Replication',
    'role:master',
    '',
  ].join('\r\n');
  return protocol === 3
    ? encode(resp.verbatim('txt', text), { protocol })
    : bulkReply(Buffer.from(text), protocol);
}

export function echo(args: Buffer[], protocol: RespProtocol): Buffer {
  return args.length === 1 ? bulkReply(args[0]!, protocol) : errorReply(ReplyText.arity('echo'));
}

export type ClientOutcome =
  /** Answered here; `replay` is also sent to the principal (its reply dropped) to keep it informed. */
  | { reply: Buffer; replay?: Buffer[] }
  /** Not ours: the principal Redis answers. */
  | { forward: true };

/** CLIENT subcommands that carry connection state the proxy owns; the rest go to the principal. */
export function client(args: Buffer[], state: SessionState, protocol: RespProtocol): ClientOutcome {
  const sub = args[0]?.toString('latin1').toLowerCase();
  switch (sub) {
    case 'id':
      return { reply: args.length === 1 ? integerReply(state.id) : errorReply(ReplyText.arity('client|id')) };
    case 'getname':
      if (args.length !== 1) return { reply: errorReply(ReplyText.arity('client|getname')) };
      return { reply: state.name ? bulkReply(state.name, protocol) : nullBulk(protocol) };
    case 'setname': {
      if (args.length !== 2) return { reply: errorReply(ReplyText.arity('client|setname')) };
      const name = args[1]!;
      if (!validClientName(name)) return { reply: errorReply(ReplyText.badClientName) };
      state.name = name.length === 0 ? undefined : name;
      return { reply: simpleString('OK'), replay: [Buffer.from('CLIENT'), Buffer.from('SETNAME'), name] };
    }
    case 'setinfo': {
      if (args.length !== 3) return { reply: errorReply(ReplyText.arity('client|setinfo')) };
      const attr = args[1]!.toString('latin1').toLowerCase();
      if (attr !== 'lib-name' && attr !== 'lib-ver')
        return { reply: errorReply(`ERR Unrecognized option '${args[1]!.toString('latin1')}'`) };
      if (!validClientName(args[2]!))
        return { reply: errorReply(`ERR ${attr} cannot contain spaces, newlines or special characters.`) };
      return {
        reply: simpleString('OK'),
        replay: [Buffer.from('CLIENT'), Buffer.from('SETINFO'), args[1]!, args[2]!],
      };
    }
    // go-redis asks for Redis Enterprise's maintenance notifications on every RESP3 connection;
    // answered as Redis 7 answers it, so the client turns the feature off and carries on.
    case 'maint_notifications':
      return {
        reply: errorReply(`ERR unknown subcommand '${args[0]!.toString('latin1')}'. Try CLIENT HELP.`),
      };
    // Each changes how many replies follow a command, which the reply order depends on.
    case 'reply':
    case 'tracking':
    case 'caching':
      return { reply: errorReply(ReplyText.notSupported(`CLIENT ${sub.toUpperCase()}`)) };
    default:
      return { forward: true };
  }
}
