import { errorReply, type RespValue } from '@pullplane/resp';
import { isTunnelError, type OpenInit, TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';
import { ReplyText } from './errors.js';

/** The part of AgentRouter (@pullplane/router) the redis proxy uses. */
export interface AgentOpener {
  /** Throws a NOT_FOUND TunnelError synchronously when no gateway holds the agent. */
  open(agent: string, init: Omit<OpenInit, 'agent'>): TunnelStream;
  /** Whether presence currently knows the agent (undefined: not connected anywhere). */
  lookup(agent: string): unknown;
}

/** One reply for the client: its bytes (in the requested protocol) and its decoded value. */
export interface AgentReply {
  raw: Buffer;
  value: RespValue;
  /** Set when the proxy answered for the agent (not connected, timed out, failed): not the agent's Redis. */
  failed?: true;
}

export function errorAsReply(message: string): AgentReply {
  return { raw: errorReply(message), value: { type: 'error', value: message }, failed: true };
}

/** The one place where tunnel failures become Redis errors. */
export function tunnelFailure(agent: string, err: unknown): string {
  if (!isTunnelError(err)) return ReplyText.agentFailed(agent, String(err));
  switch (err.code) {
    case TunnelErrorCode.NOT_FOUND:
      return ReplyText.notConnected(agent);
    case TunnelErrorCode.UNAVAILABLE:
    case TunnelErrorCode.GOING_AWAY:
      return ReplyText.unreachable(agent, err.message);
    case TunnelErrorCode.REFUSED:
      return ReplyText.refused(agent, err.message);
    default:
      return ReplyText.agentFailed(agent, err.message);
  }
}
