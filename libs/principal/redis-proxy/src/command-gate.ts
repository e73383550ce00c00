import { errorReply, type RespCommand } from '@pullplane/resp';
import { type Command, commandLabel } from './commands/table.js';
import { ReplyText } from './errors.js';
import type { ProxyContext } from './proxy-context.js';

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
export function gate(
  command: Command | undefined,
  cmd: RespCommand,
  state: GateState,
  ctx: ProxyContext,
): GateOutcome {
  const { name, args } = cmd;
  if (!state.authenticated && !command?.beforeAuth) {
    ctx.metrics.commandRefused(commandLabel(name), 'unauthenticated');
    return { reply: errorReply(ReplyText.noAuth), allowList: false };
  }
  const refused = ctx.commands.refusal(command, name, args);
  if (refused !== undefined) {
    ctx.metrics.commandRefused(commandLabel(refused), 'not_allowed');
    return { reply: errorReply(ReplyText.notAllowed(refused)), allowList: true };
  }
  if (state.protocol === 2 && state.subscriptions > 0 && !command?.whileSubscribed)
    return { reply: errorReply(ReplyText.subscribeContext(name)), allowList: false };
  return undefined;
}
