/**
 * The value model: one discriminated union member per RESP type. Binary-safe payloads
 * (bulk strings, verbatim strings, blob errors) stay Buffers so nothing is decoded or copied
 * unless the caller asks; line types (simple strings, errors) are UTF-8 strings because
 * they never carry binary data in practice and are mostly compared as text.
 *
 * RESP2-only shapes are kept distinct from RESP3 ones so a proxy can re-encode what it
 * received faithfully: `$-1` is `{ type: 'bulk', value: null }`, `*-1` is
 * `{ type: 'array', value: null }`, RESP3 `_` is `{ type: 'null' }`.
 */

/** Which protocol version an encoder writes (set per connection by `HELLO`). */
export type RespProtocol = 2 | 3;

/** Key/value pairs of a map or attribute, in wire order (keys may be any value, may repeat). */
export type RespPairs = Array<[RespValue, RespValue]>;

interface WithAttributes {
  /**
   * RESP3 attributes (`|`) that preceded this value on the wire. The decoder attaches them
   * to the value they describe instead of emitting them separately, because an attribute
   * is not an element of the enclosing aggregate and must not shift element counts.
   * Encoding drops them for RESP2, as Redis does.
   */
  attributes?: RespPairs;
}

/** `+OK` */
export interface RespSimpleString extends WithAttributes {
  type: 'simple';
  value: string;
}
/** `-ERR message` — the error code is the first word of `value`. */
export interface RespErrorReply extends WithAttributes {
  type: 'error';
  value: string;
}
/** `:42` — a signed 64-bit integer: a number when it is a safe integer, else a bigint. */
export interface RespInteger extends WithAttributes {
  type: 'integer';
  value: number | bigint;
}
/** `$3\r\nfoo` or `$-1` (RESP2 null bulk string). */
export interface RespBulkString extends WithAttributes {
  type: 'bulk';
  value: Buffer | null;
}
/** `*2\r\n...` or `*-1` (RESP2 null array). */
export interface RespArray extends WithAttributes {
  type: 'array';
  value: RespValue[] | null;
}
/** RESP3 `_`. */
export interface RespNull extends WithAttributes {
  type: 'null';
}
/** RESP3 `#t` / `#f`. */
export interface RespBoolean extends WithAttributes {
  type: 'boolean';
  value: boolean;
}
/** RESP3 `,3.14` (also `inf`, `-inf`, `nan`). */
export interface RespDouble extends WithAttributes {
  type: 'double';
  value: number;
}
/** RESP3 `(12345678901234567890`. */
export interface RespBigNumber extends WithAttributes {
  type: 'bignum';
  value: bigint;
}
/** RESP3 `!<len>\r\n<bytes>` — a binary-safe error. */
export interface RespBlobError extends WithAttributes {
  type: 'blobError';
  value: Buffer;
}
/** RESP3 `=<len>\r\ntxt:<bytes>` — `format` is the three-character prefix (`txt`, `mkd`). */
export interface RespVerbatimString extends WithAttributes {
  type: 'verbatim';
  format: string;
  value: Buffer;
}
/** RESP3 `%<n>` — n key/value pairs. */
export interface RespMap extends WithAttributes {
  type: 'map';
  value: RespPairs;
}
/** RESP3 `~<n>`. */
export interface RespSet extends WithAttributes {
  type: 'set';
  value: RespValue[];
}
/** RESP3 `><n>` — out-of-band data such as pub/sub messages. */
export interface RespPush extends WithAttributes {
  type: 'push';
  value: RespValue[];
}

export type RespValue =
  | RespSimpleString
  | RespErrorReply
  | RespInteger
  | RespBulkString
  | RespArray
  | RespNull
  | RespBoolean
  | RespDouble
  | RespBigNumber
  | RespBlobError
  | RespVerbatimString
  | RespMap
  | RespSet
  | RespPush;

export type RespType = RespValue['type'];
