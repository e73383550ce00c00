/** Stable codes for every way encoding or decoding RESP can fail. */
export const RespErrorCode = {
  /** The peer sent bytes that are not valid RESP (or not a valid command in server mode). */
  PROTOCOL: 'RESP_PROTOCOL_ERROR',
  /** The peer announced or sent more than a configured limit allows. */
  LIMIT_EXCEEDED: 'RESP_LIMIT_EXCEEDED',
  /** A value handed to the encoder cannot be represented (e.g. a non-integer integer). */
  INVALID_VALUE: 'RESP_INVALID_VALUE',
  /** `decodeAll` reached the end of its input in the middle of a value. */
  INCOMPLETE: 'RESP_INCOMPLETE',
} as const;
export type RespErrorCode = (typeof RespErrorCode)[keyof typeof RespErrorCode];

/** The decoder limit a LIMIT_EXCEEDED error is about (`admit`: the decoder's `admit` hook said no). */
export type RespLimitName =
  | 'maxBulkLength'
  | 'maxArrayLength'
  | 'maxInlineLength'
  | 'maxCommandBytes'
  | 'maxDepth'
  | 'admit';

/**
 * Decoder errors carry Redis-style messages ("Protocol error: invalid bulk length") so a server
 * can answer `-ERR <message>` exactly as Redis would before closing the connection. Limit errors
 * also name the limit, so a server can word its own answer (which setting, before or after AUTH).
 */
export class RespError extends Error {
  override readonly name = 'RespError';
  constructor(
    readonly code: RespErrorCode,
    message: string,
    readonly limit?: RespLimitName,
  ) {
    super(message);
  }
}

export function isRespError(err: unknown): err is RespError {
  return err instanceof RespError;
}

export function protocolError(message: string): RespError {
  return new RespError(RespErrorCode.PROTOCOL, `Protocol error: ${message}`);
}

export function limitError(message: string, limit: RespLimitName): RespError {
  return new RespError(RespErrorCode.LIMIT_EXCEEDED, `Protocol error: ${message}`, limit);
}
