import { formatDouble } from './bytes.js';
import { RespError, RespErrorCode } from './errors.js';
import type { RespPairs, RespProtocol, RespValue } from './types.js';
import { ByteWriter } from './writer.js';

export interface EncodeOptions {
  /** 3 writes every type natively; 2 downgrades RESP3 types exactly as Redis does for RESP2 clients. */
  protocol: RespProtocol;
}

export interface EncodeChunksOptions extends EncodeOptions {
  /** Payloads at least this long are returned by reference instead of copied (default 16 KiB). */
  zeroCopyMin?: number;
}

const CRLF_RE = /[\r\n]/g;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Line types can never contain CR or LF, or one reply would turn into two. Redis replaces
 * them with spaces in error messages; we do the same for every line.
 */
export function sanitizeLine(s: string): string {
  return s.includes('\r') || s.includes('\n') ? s.replace(CRLF_RE, ' ') : s;
}

export function formatInteger(value: number | bigint): string {
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value > INT64_MAX) throw invalid(`integer ${value} is outside int64`);
    return value.toString();
  }
  // 2^63 is exactly representable as a double, so `<` keeps the upper bound exclusive.
  if (!Number.isInteger(value) || value < -(2 ** 63) || value >= 2 ** 63) {
    throw invalid(`integer ${value} is not an int64`);
  }
  if (Number.isSafeInteger(value)) return Object.is(value, -0) ? '0' : String(value);
  // String() prints the shortest round-trip form (…776000), not the exact integer a double holds.
  return BigInt(value).toString();
}

function invalid(message: string): RespError {
  return new RespError(RespErrorCode.INVALID_VALUE, message);
}

/** Encodes a value to one buffer. Throws RespError(RESP_INVALID_VALUE) for unrepresentable values. */
export function encode(value: RespValue, options: EncodeOptions): Buffer {
  const w = new ByteWriter();
  writeValue(w, value, options.protocol);
  return w.toBuffer();
}

/** Encodes a value to chunks suitable for writev; large payloads are not copied. */
export function encodeChunks(value: RespValue, options: EncodeChunksOptions): Buffer[] {
  const w = new ByteWriter(options.zeroCopyMin ?? 16 * 1024);
  writeValue(w, value, options.protocol);
  return w.chunkList();
}

/** Appends the encoding of `value` to a writer (lets callers batch many replies in one buffer). */
export function writeValue(w: ByteWriter, v: RespValue, protocol: RespProtocol): void {
  const resp3 = protocol === 3;
  if (resp3 && v.attributes !== undefined) writePairs(w, '|', v.attributes, protocol);
  switch (v.type) {
    case 'simple':
      w.ascii('+');
      w.utf8(sanitizeLine(v.value));
      w.ascii('\r\n');
      return;
    case 'error':
      w.ascii('-');
      w.utf8(sanitizeLine(v.value));
      w.ascii('\r\n');
      return;
    case 'integer':
      w.ascii(`:${formatInteger(v.value)}\r\n`);
      return;
    case 'bulk':
      if (v.value === null) w.ascii(resp3 ? '_\r\n' : '$-1\r\n');
      else writeBlob(w, '$', v.value);
      return;
    case 'array':
      if (v.value === null) w.ascii(resp3 ? '_\r\n' : '*-1\r\n');
      else writeItems(w, '*', v.value, protocol);
      return;
    case 'null':
      // Redis' addReplyNull: RESP2 clients get a null bulk string.
      w.ascii(resp3 ? '_\r\n' : '$-1\r\n');
      return;
    case 'boolean':
      if (resp3) w.ascii(v.value ? '#t\r\n' : '#f\r\n');
      else w.ascii(v.value ? ':1\r\n' : ':0\r\n');
      return;
    case 'double': {
      const s = formatDouble(v.value);
      w.ascii(resp3 ? `,${s}\r\n` : `$${s.length}\r\n${s}\r\n`);
      return;
    }
    case 'bignum': {
      const s = v.value.toString();
      w.ascii(resp3 ? `(${s}\r\n` : `$${s.length}\r\n${s}\r\n`);
      return;
    }
    case 'blobError':
      if (resp3) {
        writeBlob(w, '!', v.value);
      } else {
        w.ascii('-');
        w.bytes(sanitizeBytes(v.value));
        w.ascii('\r\n');
      }
      return;
    case 'verbatim':
      if (resp3) {
        checkFormat(v.format);
        w.ascii(`=${v.value.length + 4}\r\n${v.format}:`);
        w.bytes(v.value);
        w.ascii('\r\n');
      } else {
        writeBlob(w, '$', v.value);
      }
      return;
    case 'map':
      // RESP2 has no maps: Redis sends a flat array of keys and values.
      if (resp3) writePairs(w, '%', v.value, protocol);
      else writeFlatPairs(w, v.value, protocol);
      return;
    case 'set':
      writeItems(w, resp3 ? '~' : '*', v.value, protocol);
      return;
    case 'push':
      // RESP2 pub/sub messages are plain arrays.
      writeItems(w, resp3 ? '>' : '*', v.value, protocol);
      return;
  }
}

function writeBlob(w: ByteWriter, prefix: string, payload: Buffer): void {
  w.ascii(`${prefix}${payload.length}\r\n`);
  w.bytes(payload);
  w.ascii('\r\n');
}

function writeItems(w: ByteWriter, prefix: string, items: RespValue[], protocol: RespProtocol): void {
  w.ascii(`${prefix}${items.length}\r\n`);
  for (const item of items) writeValue(w, item, protocol);
}

function writePairs(w: ByteWriter, prefix: string, pairs: RespPairs, protocol: RespProtocol): void {
  w.ascii(`${prefix}${pairs.length}\r\n`);
  for (const [k, val] of pairs) {
    writeValue(w, k, protocol);
    writeValue(w, val, protocol);
  }
}

function writeFlatPairs(w: ByteWriter, pairs: RespPairs, protocol: RespProtocol): void {
  w.ascii(`*${pairs.length * 2}\r\n`);
  for (const [k, val] of pairs) {
    writeValue(w, k, protocol);
    writeValue(w, val, protocol);
  }
}

function sanitizeBytes(b: Buffer): Buffer {
  if (b.indexOf(13) === -1 && b.indexOf(10) === -1) return b;
  const copy = Buffer.from(b);
  for (let i = 0; i < copy.length; i++) if (copy[i] === 13 || copy[i] === 10) copy[i] = 0x20;
  return copy;
}

function checkFormat(format: string): void {
  // Written as latin1, so each of the three characters must be a single byte.
  let ok = format.length === 3;
  for (let i = 0; ok && i < 3; i++) ok = format.charCodeAt(i) <= 0xff;
  if (!ok) throw invalid(`verbatim format must be 3 bytes, got ${JSON.stringify(format)}`);
}
