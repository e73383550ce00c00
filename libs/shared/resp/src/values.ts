import type {
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
  RespPush,
  RespSet,
  RespSimpleString,
  RespValue,
  RespVerbatimString,
} from './types.js';

const toBuffer = (v: Buffer | string): Buffer => (typeof v === 'string' ? Buffer.from(v) : v);

/** Constructors for values, so callers need not spell out `{ type: ..., value: ... }`. */
export const resp = {
  simple: (value: string): RespSimpleString => ({ type: 'simple', value }),
  error: (value: string): RespErrorReply => ({ type: 'error', value }),
  integer: (value: number | bigint): RespInteger => ({ type: 'integer', value }),
  bulk: (value: Buffer | string | null): RespBulkString => ({
    type: 'bulk',
    value: value === null ? null : toBuffer(value),
  }),
  array: (value: RespValue[] | null): RespArray => ({ type: 'array', value }),
  null: (): RespNull => ({ type: 'null' }),
  boolean: (value: boolean): RespBoolean => ({ type: 'boolean', value }),
  double: (value: number): RespDouble => ({ type: 'double', value }),
  bignum: (value: bigint): RespBigNumber => ({ type: 'bignum', value }),
  blobError: (value: Buffer | string): RespBlobError => ({ type: 'blobError', value: toBuffer(value) }),
  verbatim: (format: string, value: Buffer | string): RespVerbatimString => ({
    type: 'verbatim',
    format,
    value: toBuffer(value),
  }),
  map: (value: RespPairs): RespMap => ({ type: 'map', value }),
  set: (value: RespValue[]): RespSet => ({ type: 'set', value }),
  push: (value: RespValue[]): RespPush => ({ type: 'push', value }),
  /** An array of bulk strings, i.e. a command or a RESP2 pub/sub message. */
  command: (args: ReadonlyArray<Buffer | string>): RespArray => ({
    type: 'array',
    value: args.map((a) => ({ type: 'bulk', value: toBuffer(a) })),
  }),
} as const;
