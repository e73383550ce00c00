/**
 * Ready-made encodings for the replies a proxy or server writes most, without building a
 * value tree first.
 */
import { formatInteger, sanitizeLine } from './encoder.js';
import type { RespProtocol } from './types.js';
import { ByteWriter } from './writer.js';

/** A command as clients send it: an array of bulk strings. Strings are written as UTF-8. */
export function encodeCommand(args: ReadonlyArray<string | Uint8Array>): Buffer {
  let allStrings = true;
  for (const a of args) {
    if (typeof a !== 'string') {
      allStrings = false;
      break;
    }
  }
  if (allStrings) {
    // The common case (keys and values as text) becomes one string and one copy.
    let s = `*${args.length}\r\n`;
    for (const a of args as readonly string[]) s += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
    return Buffer.from(s);
  }
  const w = new ByteWriter();
  w.ascii(`*${args.length}\r\n`);
  for (const a of args) {
    if (typeof a === 'string') {
      w.ascii(`$${Buffer.byteLength(a)}\r\n`);
      w.utf8(a);
    } else {
      w.ascii(`$${a.length}\r\n`);
      w.bytes(a);
    }
    w.ascii('\r\n');
  }
  return w.toBuffer();
}

/** `+<s>\r\n`; CR/LF in `s` become spaces so the reply can never split in two. */
export function simpleString(s: string): Buffer {
  return Buffer.from(`+${sanitizeLine(s)}\r\n`);
}

/**
 * `-<message>\r\n`, written literally: include the error code yourself (`ERR ...`,
 * `WRONGTYPE ...`); an empty message gives `-\r\n`. CR/LF become spaces, as in Redis.
 */
export function errorReply(message: string): Buffer {
  return Buffer.from(`-${sanitizeLine(message)}\r\n`);
}

/** `:<n>\r\n`; throws RespError(RESP_INVALID_VALUE) unless n is an int64. */
export function integerReply(n: number | bigint): Buffer {
  return Buffer.from(`:${formatInteger(n)}\r\n`);
}

/** `$<len>\r\n<bytes>\r\n`; null gives the protocol's null (`$-1` in RESP2, `_` in RESP3). */
export function bulkReply(value: Uint8Array | string | null, protocol: RespProtocol = 2): Buffer {
  if (value === null) return nullBulk(protocol);
  const payload = typeof value === 'string' ? Buffer.from(value) : value;
  const header = `$${payload.length}\r\n`;
  const out = Buffer.allocUnsafe(header.length + payload.length + 2);
  out.write(header, 0, 'latin1');
  out.set(payload, header.length);
  out.write('\r\n', header.length + payload.length, 'latin1');
  return out;
}

/** The null a missing string gets: `$-1\r\n` (RESP2) or `_\r\n` (RESP3). */
export function nullBulk(protocol: RespProtocol = 2): Buffer {
  return Buffer.from(protocol === 3 ? '_\r\n' : '$-1\r\n');
}

/** The null a missing array gets: `*-1\r\n` (RESP2) or `_\r\n` (RESP3). */
export function nullArray(protocol: RespProtocol = 2): Buffer {
  return Buffer.from(protocol === 3 ? '_\r\n' : '*-1\r\n');
}
