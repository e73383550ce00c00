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
import type { CommandSession, LocalAnswer, SessionState } from './commands/spec.js';
import { ReplyText } from './errors.js';

/** What the proxy reports as its Redis version in HELLO (go-redis and redis-cli only log it). */
export const REPORTED_REDIS_VERSION = '7.0.0';

const digest = (b: Buffer | string) => createHash('sha256').update(b).digest();

/** Constant-time password check (the default user only, as with `requirepass`). */
function checkPassword(
  configured: string | undefined,
  user: Buffer | undefined,
  given: Buffer,
): 'ok' | 'wrong' | 'unset' {
  if (user !== undefined && user.toString('latin1') !== 'default') return 'wrong';
  if (configured === undefined || configured === '') return user === undefined ? 'unset' : 'ok';
  return timingSafeEqual(digest(configured), digest(given)) ? 'ok' : 'wrong';
}

function authReply(args: Buffer[], state: SessionState, password: string | undefined): Buffer {
  if (args.length !== 1 && args.length !== 2) return errorReply(ReplyText.syntax);
  const result = checkPassword(password, args.length === 2 ? args[0] : undefined, args[args.length - 1]!);
  if (result === 'unset') return errorReply(ReplyText.noPasswordConfigured);
  if (result === 'wrong') return errorReply(ReplyText.wrongPass);
  state.authenticated = true;
  return simpleString('OK');
}

/** Redis' rule for client names: printable ASCII, no spaces. */
function validClientName(name: Buffer): boolean {
  for (const c of name) if (c < 0x21 || c > 0x7e) return false;
  return true;
}

interface HelloOutcome {
  reply: Buffer;
  /** Set when the protocol changed: the principal connection must follow. */
  protocolChanged?: RespProtocol;
  /** Set when HELLO named the client. */
  nameChanged?: boolean;
}

/** `HELLO [protover [AUTH user pass] [SETNAME name]]`, answered the way Redis does. */
function helloOutcome(args: Buffer[], state: SessionState, password: string | undefined): HelloOutcome {
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

/** `AUTH [user] password`, against `--redis-password` as Redis checks `requirepass`. */
export const auth: LocalAnswer = (s, { args }) => {
  s.reply(authReply(args, s.state, s.password));
  s.authenticationChanged();
};

/** HELLO, answered here; a change of protocol or name is replayed on the client's own principal connection. */
export const hello: LocalAnswer = (s, { args }) => {
  const outcome = helloOutcome(args, s.state, s.password);
  s.reply(outcome.reply);
  s.authenticationChanged();
  if (outcome.protocolChanged !== undefined) s.replay(['HELLO', String(outcome.protocolChanged)], 'HELLO');
  if (outcome.nameChanged && s.state.name)
    s.replay([Buffer.from('CLIENT'), Buffer.from('SETNAME'), s.state.name], 'CLIENT SETNAME');
};

/** PING: PONG, the argument back, or in RESP2 subscriber mode the ["pong", arg] array. */
export const ping: LocalAnswer = (s, { args }) => {
  const { protocol } = s.state;
  if (args.length > 1) s.reply(errorReply(ReplyText.arity('ping')));
  else if (s.subscriptions > 0 && protocol === 2)
    s.reply(encode(resp.array([resp.bulk('pong'), resp.bulk(args[0] ?? Buffer.alloc(0))]), { protocol }));
  else s.reply(args.length === 0 ? simpleString('PONG') : bulkReply(args[0]!, protocol));
};

export const echo: LocalAnswer = (s, { args }) =>
  s.reply(args.length === 1 ? bulkReply(args[0]!, s.state.protocol) : errorReply(ReplyText.arity('echo')));

/**
 * INFO, answered by the proxy: what clients check when they connect (ioredis waits for
 * `loading:0`, tools read the version and role) and nothing of the principal Redis, whose
 * configuration, clients and keyspace are not the business of its cache clients.
 */
export const info: LocalAnswer = (s) => {
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
  const { protocol } = s.state;
  s.reply(
    protocol === 3
      ? encode(resp.verbatim('txt', text), { protocol })
      : bulkReply(Buffer.from(text), protocol),
  );
};

export const quit: LocalAnswer = (s) => s.quit();
export const reset: LocalAnswer = (s) => s.reset();
export const subscribe: LocalAnswer = (s, { name, args }) =>
  s.subscribe(name === 'subscribe' ? 'channel' : 'pattern', name, args);
export const unsubscribe: LocalAnswer = (s, { name, args }) =>
  s.unsubscribe(name === 'unsubscribe' ? 'channel' : 'pattern', args);

/** A command the proxy cannot serve, answered with what it is (`MONITOR`, `sharded pub/sub`). */
export const notSupported =
  (what?: string): LocalAnswer =>
  (s, { name }) =>
    s.reply(errorReply(ReplyText.notSupported(what ?? name.toUpperCase())));

/** SELECT: relayed; the database the principal selected is replayed on a new own connection. */
export const select: LocalAnswer = (s, { args }, raw) => {
  const arg = args[0]?.toString('latin1');
  if (args.length !== 1 || arg === undefined) {
    s.reply(errorReply(ReplyText.arity('select')));
    return;
  }
  const n = /^\d{1,9}$/.test(arg) ? Number(arg) : undefined;
  s.forward(raw, (value) => {
    if (value.type !== 'error' && n !== undefined) s.selected(n);
  });
};

/** MULTI: relayed, and the commands after it are queued (see Transaction). */
export const multi: LocalAnswer = (s, _cmd, raw) => {
  s.forward(raw);
  s.beginTransaction();
};

// CLIENT subcommands that carry connection state the proxy owns (the rest reach the principal).

export const clientId: LocalAnswer = (s, { args }) =>
  s.reply(args.length === 1 ? integerReply(s.state.id) : errorReply(ReplyText.arity('client|id')));

export const clientGetname: LocalAnswer = (s, { args }) => {
  if (args.length !== 1) s.reply(errorReply(ReplyText.arity('client|getname')));
  else s.reply(s.state.name ? bulkReply(s.state.name, s.state.protocol) : nullBulk(s.state.protocol));
};

export const clientSetname: LocalAnswer = (s, { args }) => {
  const name = args[1];
  if (args.length !== 2 || name === undefined) s.reply(errorReply(ReplyText.arity('client|setname')));
  else if (!validClientName(name)) s.reply(errorReply(ReplyText.badClientName));
  else setName(s, name);
};

function setName(s: CommandSession, name: Buffer): void {
  s.state.name = name.length === 0 ? undefined : name;
  s.reply(simpleString('OK'));
  s.replay([Buffer.from('CLIENT'), Buffer.from('SETNAME'), name], 'CLIENT');
}

export const clientSetinfo: LocalAnswer = (s, { args }) => {
  if (args.length !== 3) {
    s.reply(errorReply(ReplyText.arity('client|setinfo')));
    return;
  }
  const attr = args[1]!.toString('latin1').toLowerCase();
  if (attr !== 'lib-name' && attr !== 'lib-ver')
    s.reply(errorReply(`ERR Unrecognized option '${args[1]!.toString('latin1')}'`));
  else if (!validClientName(args[2]!))
    s.reply(errorReply(`ERR ${attr} cannot contain spaces, newlines or special characters.`));
  else {
    s.reply(simpleString('OK'));
    s.replay([Buffer.from('CLIENT'), Buffer.from('SETINFO'), args[1]!, args[2]!], 'CLIENT');
  }
};

/**
 * go-redis asks for Redis Enterprise's maintenance notifications on every RESP3 connection;
 * answered as Redis 7 answers it, so the client turns the feature off and carries on.
 */
export const clientMaintNotifications: LocalAnswer = (s, { args }) =>
  s.reply(errorReply(`ERR unknown subcommand '${args[0]!.toString('latin1')}'. Try CLIENT HELP.`));
