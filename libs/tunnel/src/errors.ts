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

const byReset: Record<number, TunnelErrorCode> = {
  [ResetCode.CANCEL]: TunnelErrorCode.CANCELLED,
  [ResetCode.INTERNAL]: TunnelErrorCode.INTERNAL,
  [ResetCode.FLOW_CONTROL]: TunnelErrorCode.FLOW_CONTROL,
  [ResetCode.PROTOCOL]: TunnelErrorCode.PROTOCOL,
  [ResetCode.REFUSED]: TunnelErrorCode.REFUSED,
  [ResetCode.UNAVAILABLE]: TunnelErrorCode.UNAVAILABLE,
  [ResetCode.NOT_FOUND]: TunnelErrorCode.NOT_FOUND,
  // A route refusal that reaches a stream as such (not rerouted) reads as "agent not found".
  [ResetCode.NO_ROUTE]: TunnelErrorCode.NOT_FOUND,
  [ResetCode.DEADLINE_EXCEEDED]: TunnelErrorCode.DEADLINE_EXCEEDED,
};

const toReset: Record<TunnelErrorCode, ResetCode> = {
  [TunnelErrorCode.CANCELLED]: ResetCode.CANCEL,
  [TunnelErrorCode.INTERNAL]: ResetCode.INTERNAL,
  [TunnelErrorCode.FLOW_CONTROL]: ResetCode.FLOW_CONTROL,
  [TunnelErrorCode.PROTOCOL]: ResetCode.PROTOCOL,
  [TunnelErrorCode.REFUSED]: ResetCode.REFUSED,
  [TunnelErrorCode.UNAVAILABLE]: ResetCode.UNAVAILABLE,
  [TunnelErrorCode.NOT_FOUND]: ResetCode.NOT_FOUND,
  [TunnelErrorCode.DEADLINE_EXCEEDED]: ResetCode.DEADLINE_EXCEEDED,
  [TunnelErrorCode.GOING_AWAY]: ResetCode.UNAVAILABLE,
};

export class TunnelError extends errorClass(TunnelErrors) {
  static fromReset(code: ResetCode, message: string): TunnelError {
    return new TunnelError(byReset[code] ?? TunnelErrorCode.INTERNAL, message || 'stream reset by peer');
  }

  get resetCode(): ResetCode {
    return toReset[this.code];
  }
}

export function isTunnelError(err: unknown): err is TunnelError {
  return err instanceof TunnelError;
}
