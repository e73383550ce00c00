import { ResetCode } from '@pullplane/proto';

/** Stable codes for every way a logical stream or tunnel can fail. */
export const TunnelErrorCode = {
  CANCELLED: 'TUNNEL_STREAM_CANCELLED',
  INTERNAL: 'TUNNEL_STREAM_INTERNAL',
  FLOW_CONTROL: 'TUNNEL_FLOW_CONTROL',
  PROTOCOL: 'TUNNEL_PROTOCOL',
  REFUSED: 'TUNNEL_STREAM_REFUSED',
  UNAVAILABLE: 'TUNNEL_UNAVAILABLE',
  NOT_FOUND: 'TUNNEL_AGENT_NOT_FOUND',
  DEADLINE_EXCEEDED: 'TUNNEL_DEADLINE_EXCEEDED',
  GOING_AWAY: 'TUNNEL_GOING_AWAY',
} as const;
export type TunnelErrorCode = (typeof TunnelErrorCode)[keyof typeof TunnelErrorCode];

const byReset: Record<number, TunnelErrorCode> = {
  [ResetCode.CANCEL]: TunnelErrorCode.CANCELLED,
  [ResetCode.INTERNAL]: TunnelErrorCode.INTERNAL,
  [ResetCode.FLOW_CONTROL]: TunnelErrorCode.FLOW_CONTROL,
  [ResetCode.PROTOCOL]: TunnelErrorCode.PROTOCOL,
  [ResetCode.REFUSED]: TunnelErrorCode.REFUSED,
  [ResetCode.UNAVAILABLE]: TunnelErrorCode.UNAVAILABLE,
  [ResetCode.NOT_FOUND]: TunnelErrorCode.NOT_FOUND,
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

export class TunnelError extends Error {
  override readonly name = 'TunnelError';
  constructor(
    readonly code: TunnelErrorCode,
    message: string,
  ) {
    super(message);
  }

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
