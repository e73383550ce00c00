import { defineErrors, errorClass } from '@pullplane/errors';
import { ResetCode } from '@pullplane/proto';

/** Every way a logical stream or tunnel can fail. */
export const TunnelErrors = defineErrors('@pullplane/tunnel', {
  CANCELLED: { code: 'TUNNEL_STREAM_CANCELLED', status: 499, message: 'the requester gave up on the stream' },
  INTERNAL: {
    code: 'TUNNEL_STREAM_INTERNAL',
    status: 500,
    message: 'the far side failed while serving the stream',
  },
  FLOW_CONTROL: {
    code: 'TUNNEL_FLOW_CONTROL',
    status: 502,
    message: 'the peer sent more data than the stream window allowed',
  },
  PROTOCOL: { code: 'TUNNEL_PROTOCOL', status: 502, message: 'the peer broke the tunnel protocol' },
  REFUSED: {
    code: 'TUNNEL_STREAM_REFUSED',
    status: 503,
    message: 'the agent does not serve this kind of stream',
  },
  UNAVAILABLE: { code: 'TUNNEL_UNAVAILABLE', status: 502, message: 'the tunnel to the agent was lost' },
  NOT_FOUND: { code: 'TUNNEL_AGENT_NOT_FOUND', status: 502, message: 'the agent is not connected' },
  DEADLINE_EXCEEDED: {
    code: 'TUNNEL_DEADLINE_EXCEEDED',
    status: 504,
    message: 'the agent did not answer in time',
  },
  GOING_AWAY: { code: 'TUNNEL_GOING_AWAY', status: 503, message: 'the tunnel is closing: no new streams' },
});
export const TunnelErrorCode = TunnelErrors.codes;
export type TunnelErrorCode = (typeof TunnelErrorCode)[keyof typeof TunnelErrorCode];

/**
 * The one table between the wire's reset codes and TunnelErrors: what a received reset reads as,
 * and what a TunnelError is sent as. Every hop converts through it, so a code means the same at
 * the agent, the gateway, the router and the HTTP front.
 */
const RESETS: ReadonlyArray<{
  reset: ResetCode;
  reads: TunnelErrorCode;
  sentFor: readonly TunnelErrorCode[];
}> = [
  { reset: ResetCode.CANCEL, reads: TunnelErrorCode.CANCELLED, sentFor: [TunnelErrorCode.CANCELLED] },
  { reset: ResetCode.INTERNAL, reads: TunnelErrorCode.INTERNAL, sentFor: [TunnelErrorCode.INTERNAL] },
  {
    reset: ResetCode.FLOW_CONTROL,
    reads: TunnelErrorCode.FLOW_CONTROL,
    sentFor: [TunnelErrorCode.FLOW_CONTROL],
  },
  { reset: ResetCode.PROTOCOL, reads: TunnelErrorCode.PROTOCOL, sentFor: [TunnelErrorCode.PROTOCOL] },
  { reset: ResetCode.REFUSED, reads: TunnelErrorCode.REFUSED, sentFor: [TunnelErrorCode.REFUSED] },
  // A tunnel going away is, for the stream it cuts, a tunnel lost.
  {
    reset: ResetCode.UNAVAILABLE,
    reads: TunnelErrorCode.UNAVAILABLE,
    sentFor: [TunnelErrorCode.UNAVAILABLE, TunnelErrorCode.GOING_AWAY],
  },
  { reset: ResetCode.NOT_FOUND, reads: TunnelErrorCode.NOT_FOUND, sentFor: [TunnelErrorCode.NOT_FOUND] },
  {
    reset: ResetCode.DEADLINE_EXCEEDED,
    reads: TunnelErrorCode.DEADLINE_EXCEEDED,
    sentFor: [TunnelErrorCode.DEADLINE_EXCEEDED],
  },
  // The gateway's route refusal on a proxy link (see `routeRefusalCode`): a stream that meets it
  // as such, not retried elsewhere, reads as "agent not found".
  { reset: ResetCode.NO_ROUTE, reads: TunnelErrorCode.NOT_FOUND, sentFor: [] },
];

const byReset = new Map(RESETS.map((r) => [r.reset as number, r.reads]));
const toReset = new Map(RESETS.flatMap((r) => r.sentFor.map((code) => [code, r.reset] as const)));

/**
 * Whether a reset is a gateway's route refusal: it holds no usable tunnel to the agent and relayed
 * nothing, so the requester may send the same Open to the gateway that holds the agent now.
 */
export function isRouteRefusal(code: ResetCode): boolean {
  return code === ResetCode.NO_ROUTE;
}

/**
 * The reset a gateway answers a proxy link's Open with when it cannot start relaying it: a route
 * refusal when the agent is not here or its tunnel is going away (another gateway may hold it),
 * else the error's own code.
 */
export function routeRefusalCode(err: TunnelError): ResetCode {
  return err.code === TunnelErrorCode.NOT_FOUND || err.code === TunnelErrorCode.GOING_AWAY
    ? ResetCode.NO_ROUTE
    : err.resetCode;
}

/**
 * The code a relay passes a peer's reset on with: read and sent again through the table, so an
 * agent cannot make its reset a route refusal (which would make the proxy send the request
 * elsewhere) nor pass on a code the table does not know.
 */
export function relayedResetCode(code: ResetCode): ResetCode {
  return toReset.get(byReset.get(code) ?? TunnelErrorCode.INTERNAL) ?? ResetCode.INTERNAL;
}

export class TunnelError extends errorClass(TunnelErrors) {
  static fromReset(code: ResetCode, message: string): TunnelError {
    return new TunnelError(byReset.get(code) ?? TunnelErrorCode.INTERNAL, message || 'stream reset by peer');
  }

  get resetCode(): ResetCode {
    return toReset.get(this.code) ?? ResetCode.INTERNAL;
  }
}

export function isTunnelError(err: unknown): err is TunnelError {
  return err instanceof TunnelError;
}
