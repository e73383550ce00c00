export { asCommand, commandFromArgs, type RespCommand } from './command.js';
export { decodeAll } from './decode-all.js';
export { RespDecoder } from './decoder.js';
export {
  DEFAULT_MAX_ARRAY_LENGTH,
  DEFAULT_MAX_BULK_LENGTH,
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_INLINE_LENGTH,
  type RespDecoderLimits,
  type RespDecoderLimitValues,
  type RespDecoderOptions,
} from './decoder-options.js';
export {
  type EncodeChunksOptions,
  type EncodeOptions,
  encode,
  encodeChunks,
  sanitizeLine,
  writeValue,
} from './encoder.js';
export { isRespError, RespError, RespErrorCode, RespErrors, type RespLimitName } from './errors.js';
export { splitInlineArgs } from './inline.js';
export {
  bulkReply,
  encodeCommand,
  errorReply,
  integerReply,
  nullArray,
  nullBulk,
  simpleString,
} from './replies.js';
export type {
  RespArray,
  RespBigNumber,
  RespBlobError,
  RespBoolean,
  RespBulkString,
  RespDouble,
  RespErrorReply,
  RespInteger,
  RespMap,
  RespNull,
  RespPairs,
  RespProtocol,
  RespPush,
  RespSet,
  RespSimpleString,
  RespType,
  RespValue,
  RespVerbatimString,
} from './types.js';
export { joinRaw, rawLength, ValueSlicer, type ValueSlicerOptions } from './value-slicer.js';
export { resp } from './values.js';
export { ByteWriter } from './writer.js';
