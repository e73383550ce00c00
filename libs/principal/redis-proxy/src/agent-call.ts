import type { OpenMessageInit } from '@pullplane/proto';
import { decodeAll, errorReply, type RespValue } from '@pullplane/resp';
import { isTunnelError, TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';
import { ReplyText } from './errors.js';

/** The part of AgentRouter (@pullplane/router) the redis proxy uses. */
export interface AgentOpener {
  /** Throws a NOT_FOUND TunnelError synchronously when no gateway holds the agent. */
  open(agent: string, init: Omit<OpenMessageInit, 'agent'>): TunnelStream;
  /** Whether presence currently knows the agent (undefined: not connected anywhere). */
  lookup(agent: string): unknown;
}

/** One reply for the client: its bytes (in the requested protocol) and its decoded value. */
export interface AgentReply {
  /** As the agent sent it: one buffer, or the pieces it arrived in (written on as they are). */
  raw: Buffer | Buffer[];
  value: RespValue;
  /** Set when the proxy answered for the agent (not connected, timed out, failed): not the agent's Redis. */
  failed?: true;
}

/**
 * A reply as the pipeline cut it. One that came in pieces was decoded without joining its
 * large payloads (see `joinSplitBulks`): its value is decoded again from the pieces only if
 * someone asks for it (a split command gathering values), never on the pass-through path.
 */
export function agentReply(value: RespValue, raw: Buffer | Buffer[]): AgentReply {
  if (Buffer.isBuffer(raw)) return { raw, value };
  let whole: RespValue | undefined;
  return {
    raw,
    get value() {
      whole ??= decodeAll(Buffer.concat(raw))[0]!;
      return whole;
    },
  };
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
