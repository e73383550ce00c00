export const BusErrorCode = {
  CONNECT_FAILED: 'BUS_CONNECT_FAILED',
  INVALID_RECORD: 'BUS_INVALID_RECORD',
  CLOSED: 'BUS_CLOSED',
} as const;
export type BusErrorCode = (typeof BusErrorCode)[keyof typeof BusErrorCode];

export class BusError extends Error {
  override readonly name = 'BusError';
  constructor(
    readonly code: BusErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
