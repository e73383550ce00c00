import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { adler32, SPDY3_DICTIONARY } from './spdy-dictionary.js';
import { SpdyProtocolError } from './spdy-frames.js';

/**
 * SPDY/3 header blocks: the name/value block format and the two zlib contexts of a connection
 * (one per direction, each primed with the SPDY dictionary and sync-flushed after every block).
 *
 * Node's zlib streams are asynchronous, so the contexts are kept as their only cross-block state:
 * the sliding window. Each block ends on a deflate block boundary (the sync flush), so a block can
 * be inflated on its own with the last 32 KiB of earlier output as a preset dictionary, and
 * deflated the same way; the bytes on the wire are one continuous zlib stream either way.
 */

const WINDOW_BYTES = 32 * 1024;
const DICTIONARY_ID = adler32(SPDY3_DICTIONARY);

/** Header names and values; several values of one name travel NUL-separated. */
export type SpdyHeaders = Map<string, string[]>;

function keepWindow(history: Buffer, more: Buffer): Buffer {
  const all = history.length === 0 ? more : Buffer.concat([history, more]);
  return all.length > WINDOW_BYTES ? Buffer.from(all.subarray(all.length - WINDOW_BYTES)) : all;
}

/** The zlib header of a stream primed with the SPDY dictionary (level 9, as Go's framer writes). */
function zlibHeader(): Buffer {
  const cmf = 0x78;
  let flg = (3 << 6) | 0x20;
  flg |= 31 - ((cmf * 256 + flg) % 31);
  const out = Buffer.alloc(6);
  out[0] = cmf;
  out[1] = flg;
  out.writeUInt32BE(DICTIONARY_ID, 2);
  return out;
}

/** Compresses the header blocks one side of a connection sends. */
export class HeaderCompressor {
  private history: Buffer = SPDY3_DICTIONARY;
  private started = false;

  compress(block: Buffer): Buffer {
    const body = deflateRawSync(block, {
      dictionary: this.history,
      finishFlush: constants.Z_SYNC_FLUSH,
      level: 9,
    });
    this.history = keepWindow(this.history, block);
    if (this.started) return body;
    this.started = true;
    return Buffer.concat([zlibHeader(), body]);
  }
}

/** Decompresses the header blocks a peer sends; any corruption is fatal to the connection. */
export class HeaderDecompressor {
  /** Undefined until the zlib header (first block) has been read. */
  private history: Buffer | undefined;

  constructor(private readonly maxBlockBytes = 256 * 1024) {}

  decompress(data: Buffer): Buffer {
    let body = data;
    let history = this.history;
    if (history === undefined) {
      if (data.length < 2) throw new SpdyProtocolError('header block too short for a zlib header');
      const cmf = data[0]!;
      const flg = data[1]!;
      if ((cmf & 0x0f) !== 8 || (cmf * 256 + flg) % 31 !== 0) {
        throw new SpdyProtocolError('header block does not start with a zlib header');
      }
      if (flg & 0x20) {
        if (data.length < 6) throw new SpdyProtocolError('header block too short for a zlib dictionary id');
        const id = data.readUInt32BE(2);
        if (id !== DICTIONARY_ID) {
          throw new SpdyProtocolError(`header compression uses dictionary ${id.toString(16)}, not SPDY/3's`);
        }
        history = SPDY3_DICTIONARY;
        body = data.subarray(6);
      } else {
        history = Buffer.alloc(0);
        body = data.subarray(2);
      }
    }
    let out: Buffer;
    try {
      out = inflateRawSync(body, {
        ...(history.length > 0 ? { dictionary: history } : {}),
        finishFlush: constants.Z_SYNC_FLUSH,
        maxOutputLength: this.maxBlockBytes,
      });
    } catch (err) {
      throw new SpdyProtocolError(`corrupt compressed header block: ${(err as Error).message}`);
    }
    this.history = keepWindow(history, out);
    return out;
  }
}

/** Encodes a name/value block: names lowercased, values of one name NUL-joined. */
export function encodeHeaderBlock(headers: Record<string, string | readonly string[]> | SpdyHeaders): Buffer {
  const entries: Array<[string, string]> = [];
  const add = (name: string, value: string | readonly string[]) =>
    entries.push([name.toLowerCase(), typeof value === 'string' ? value : value.join('\0')]);
  if (headers instanceof Map) for (const [k, v] of headers) add(k, v);
  else for (const [k, v] of Object.entries(headers)) add(k, v);
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length);
  parts.push(count);
  for (const [name, value] of entries) {
    for (const s of [name, value]) {
      const bytes = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(bytes.length);
      parts.push(len, bytes);
    }
  }
  return Buffer.concat(parts);
}

/** Decodes a name/value block; rejects what Go's framer rejects (truncation, upper case, duplicates). */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  let off = 0;
  const u32 = (what: string) => {
    if (off + 4 > block.length) throw new SpdyProtocolError(`header block truncated in ${what}`);
    const v = block.readUInt32BE(off);
    off += 4;
    return v;
  };
  const bytes = (n: number, what: string) => {
    if (off + n > block.length) throw new SpdyProtocolError(`header block truncated in ${what}`);
    const s = block.toString('utf8', off, off + n);
    off += n;
    return s;
  };
  const count = u32('the pair count');
  const headers: SpdyHeaders = new Map();
  for (let i = 0; i < count; i++) {
    const name = bytes(u32('a name length'), 'a name');
    if (name === '') throw new SpdyProtocolError('empty header name');
    if (name !== name.toLowerCase())
      throw new SpdyProtocolError(`header name ${JSON.stringify(name)} is not lower case`);
    if (headers.has(name)) throw new SpdyProtocolError(`header ${JSON.stringify(name)} appears twice`);
    headers.set(name, bytes(u32('a value length'), 'a value').split('\0'));
  }
  if (off !== block.length)
    throw new SpdyProtocolError(`${block.length - off} stray bytes after the header block`);
  return headers;
}

/** First value of a header, or undefined. */
export function headerValue(headers: SpdyHeaders, name: string): string | undefined {
  return headers.get(name.toLowerCase())?.[0];
}
