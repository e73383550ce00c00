import { errorReply, type RespCommand } from '@pullplane/resp';
import { ReplyText } from './errors.js';
import type { ProxyContext } from './proxy-context.js';
import { commandLabel } from './redis-commands.js';

/** All a client may send before authenticating (HELLO only with AUTH; PING for health checks). */
const PREAUTH = new Set(['auth', 'hello', 'ping', 'quit']);
/** All a RESP2 connection may send while subscribed. */
const SUBSCRIBED_RESP2 = new Set([
  'subscribe',
  'psubscribe',
  'ssubscribe',
  'unsubscribe',
  'punsubscribe',
  'sunsubscribe',
  'ping',
  'quit',
  'reset',
]);

/** What the connection is in, as far as the gate is concerned. */
export interface GateState {
  authenticated: boolean;
  protocol: 2 | 3;
  /** Channels and patterns the connection is subscribed to. */
  subscriptions: number;
}

export type GateOutcome =
  | undefined
  /** Refused: the reply to give; `allowList` when the allow-list said no (a transaction fails then). */
  | { reply: Buffer; allowList: boolean };

/**
 * Whether a command may run on this connection now: the client has authenticated (before that
 * only AUTH, HELLO, PING and QUIT), the allow-list admits it, and a RESP2 subscriber sends only
 * what Redis accepts in that state. Refusals are counted by command name.
 */
export function gate(cmd: RespCommand, state: GateState, ctx: ProxyContext): GateOutcome {
  const { name, args } = cmd;
  if (!state.authenticated && !PREAUTH.has(name)) {
    ctx.metrics.commandRefused(commandLabel(name), 'unauthenticated');
    return { reply: errorReply(ReplyText.noAuth), allowList: false };
  }
  const refused = ctx.policy.refusal(name, args);
  if (refused !== undefined) {
    ctx.metrics.commandRefused(commandLabel(refused), 'not_allowed');
    return { reply: errorReply(ReplyText.notAllowed(refused)), allowList: true };
  }
  if (state.protocol === 2 && state.subscriptions > 0 && !SUBSCRIBED_RESP2.has(name))
    return { reply: errorReply(ReplyText.subscribeContext(name)), allowList: false };
  return undefined;
}
