import type { ExchangeRevocation } from '@pullplane/auth';
import { isTunnelError, type TunnelError, TunnelErrorCode } from '@pullplane/tunnel';

/**
 * What the front itself can find wrong with an exchange, whichever proxy it serves. Each proxy
 * names these in its own error catalog (`FailureNames`): the one place its codes meet the front.
 */
export type FrontFailure =
  /** No gateway holds the agent's tunnel (presence has none, or the gateway said so). */
  | 'NOT_CONNECTED'
  /** The agent refused the stream: it does not serve this kind of request. */
  | 'REFUSED'
  /** No response head in time. */
  | 'TIMEOUT'
  /** The tunnel or the gateway's link went away under the request. */
  | 'TUNNEL_LOST'
  /** Anything else on the way, and a failure of the front's own handler. */
  | 'FAILED'
  /** A request body over the limit (declared, or counted as it streams). */
  | 'TOO_LARGE'
  /** The caller's token was revoked while its request was open. */
  | 'TOKEN_REVOKED'
  /** The agent was revoked while the request was open. */
  | 'AGENT_REVOKED';

/** A proxy's catalog name for each failure the front detects. */
export type FailureNames<N extends string> = Readonly<Record<FrontFailure, N>>;

/** The one table of tunnel failures: the reset code a stream ended with, as a front failure. */
export function tunnelFailure(err: TunnelError): FrontFailure {
  switch (err.code) {
    case TunnelErrorCode.NOT_FOUND:
      return 'NOT_CONNECTED';
    case TunnelErrorCode.REFUSED:
      return 'REFUSED';
    case TunnelErrorCode.DEADLINE_EXCEEDED:
      return 'TIMEOUT';
    case TunnelErrorCode.UNAVAILABLE:
    case TunnelErrorCode.GOING_AWAY:
      return 'TUNNEL_LOST';
    default:
      return 'FAILED';
  }
}

/** Why an exchange failed before its head, named in the proxy's catalog. */
export function exchangeFailure<N extends string>(
  names: FailureNames<N>,
  err: unknown,
  revoked?: ExchangeRevocation,
): { name: N; detail: string } {
  // A revocation resets the stream itself: the reset says only "cancelled", the revocation why.
  if (revoked)
    return {
      name: names[revoked.kind === 'token' ? 'TOKEN_REVOKED' : 'AGENT_REVOKED'],
      detail: revoked.reason,
    };
  if (isTunnelError(err)) return { name: names[tunnelFailure(err)], detail: err.message };
  return { name: names.FAILED, detail: String(err) };
}
