// UTF-8 helpers for the frame codec. Header names, methods and paths are short and almost
// always ASCII: below a few dozen characters a JavaScript loop beats a call into C++ (measured on
// the 2-core machine); longer text goes through Node's native encoder and decoder.

/** Below this many UTF-16 units (or bytes) the JavaScript loops are used. */
const SHORT = 32;

/**
 * Bytes `s` takes in UTF-8 as TextEncoder (protobuf-es) writes it: a lone surrogate becomes
 * U+FFFD, three bytes.
 */
export function utf8Length(s: string): number {
  const units = s.length;
  if (units >= SHORT) return Buffer.byteLength(s, 'utf8');
  let n = units;
  for (let i = 0; i < units; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < units) {
      const d = s.charCodeAt(i + 1);
      n += 2;
      // A surrogate pair: two units, four bytes.
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    } else n += 2;
  }
  return n;
}

/** Writes `s` (whose UTF-8 length is `byteLength`) at `pos`; returns the end position. */
export function writeUtf8(out: Buffer, pos: number, s: string, byteLength: number): number {
  if (byteLength === s.length && byteLength < SHORT) {
    for (let i = 0; i < byteLength; i++) out[pos + i] = s.charCodeAt(i);
    return pos + byteLength;
  }
  const written = out.write(s, pos, byteLength, 'utf8');
  if (written !== byteLength) throw new Error('frame codec: string changed while being encoded');
  return pos + byteLength;
}

// protobuf-es rejects invalid UTF-8 in proto3 strings with a fatal TextDecoder (which also drops
// a leading byte order mark); the same decoder keeps both codecs in agreement.
const strict = new TextDecoder('utf-8', { fatal: true });

// Node's native, lenient decoder, which also takes a plain Uint8Array.
const nativeSlice = Buffer.prototype.utf8Slice as (this: Uint8Array, start: number, end: number) => string;

/** Decodes bytes [start, end) of `buf` as strict UTF-8, or throws. */
export function readUtf8(buf: Uint8Array, start: number, end: number, field: string): string {
  const n = end - start;
  if (n === 0) return '';
  if (n < 8) {
    // Methods and short names: building the string here beats a call into C++.
    let s = '';
    for (let i = start; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) return readUtf8Slow(buf, start, end, field);
      s += String.fromCharCode(c);
    }
    return s;
  }
  // The lenient decoder turns invalid input into U+FFFD and keeps a leading byte order mark;
  // only then (or for a real U+FFFD) does the strict decoder have to look.
  const s = nativeSlice.call(buf, start, end);
  if (s.charCodeAt(0) === 0xfeff || s.indexOf('\ufffd') !== -1) return readUtf8Slow(buf, start, end, field);
  return s;
}

function readUtf8Slow(buf: Uint8Array, start: number, end: number, field: string): string {
  try {
    return strict.decode(buf.subarray(start, end));
  } catch {
    throw new Error(`invalid UTF-8 in ${field}`);
  }
}
