import { defineErrors, errorClass } from '@pullplane/errors';

/** Every way encoding or decoding RESP can fail. */
export const RespErrors = defineErrors('@pullplane/resp', {
  PROTOCOL: {
    code: 'RESP_PROTOCOL_ERROR',
    status: 400,
    message: 'the peer sent bytes that are not valid RESP (or not a valid command in server mode)',
  },
  LIMIT_EXCEEDED: {
    code: 'RESP_LIMIT_EXCEEDED',
    status: 413,
    message: 'the peer announced or sent more than a configured limit allows',
  },
  INVALID_VALUE: {
    code: 'RESP_INVALID_VALUE',
    status: 500,
    message: 'a value handed to the encoder cannot be represented (e.g. a non-integer integer)',
  },
  INCOMPLETE: { code: 'RESP_INCOMPLETE', status: 400, message: 'the input ended in the middle of a value' },
});
export const RespErrorCode = RespErrors.codes;
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
export class RespError extends errorClass(RespErrors) {
  constructor(
    code: RespErrorCode,
    message: string,
    readonly limit?: RespLimitName,
  ) {
    super(code, message);
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
