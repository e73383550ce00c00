/**
 * Byte constants and number parsing straight from Buffers, so the decoder's hot path never
 * builds strings for lengths and counts.
 */

export const CR = 13;
export const LF = 10;
export const PLUS = 0x2b; // +
export const MINUS = 0x2d; // -
export const COLON = 0x3a; // :
export const DOLLAR = 0x24; // $
export const STAR = 0x2a; // *
export const UNDERSCORE = 0x5f; // _
export const HASH = 0x23; // #
export const COMMA = 0x2c; // ,
export const LPAREN = 0x28; // (
export const BANG = 0x21; // !
export const EQUALS = 0x3d; // =
export const PERCENT = 0x25; // %
export const TILDE = 0x7e; // ~
export const PIPE = 0x7c; // |
export const GT = 0x3e; // >
export const SEMICOLON = 0x3b; // ;
export const DOT = 0x2e; // .
export const QUESTION = 0x3f; // ?

/** Type bytes that may start a reply (client mode); `;` only appears inside streamed strings. */
export const REPLY_TYPE_BYTES = new Uint8Array(256);
for (const c of '+-:$*_#,(!=%~|>.') REPLY_TYPE_BYTES[c.charCodeAt(0)] = 1;

const ZERO = 0x30;
const NINE = 0x39;

/**
 * Where the run of ASCII digits starting at `start` ends, when it is 1 to 15 digits long (an
 * exact number); -1 otherwise. The decoders' one-pass readers find a length with it and let
 * parseLength judge it.
 */
export function digitsEnd(buf: Buffer, start: number): number {
  const end = buf.length;
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    if (c < ZERO || c > NINE) break;
    i++;
  }
  return i === start || i - start > 15 ? -1 : i;
}

/** Renders a byte for an error message: printable ASCII as-is, anything else as \xHH. */
export function describeByte(byte: number): string {
  if (byte >= 0x20 && byte <= 0x7e) return String.fromCharCode(byte);
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/**
 * Parses a length or count the way Redis' string2ll does: optional '-', no '+', no leading
 * zeros, no spaces. Being exactly as strict as the server behind a proxy means the proxy and
 * the server can never disagree about where a frame ends. Returns NaN when malformed; numbers
 * too large to be exact come back as huge (or Infinity) and fail every limit check.
 */
export function parseLength(buf: Buffer, start: number, end: number): number {
  let i = start;
  if (i >= end) return Number.NaN;
  let negative = false;
  if (buf[i] === MINUS) {
    negative = true;
    i++;
    if (i === end) return Number.NaN;
  }
  const first = buf[i]!;
  if (first === ZERO) return !negative && i + 1 === end ? 0 : Number.NaN;
  if (first < ZERO || first > NINE) return Number.NaN;
  let n = 0;
  for (; i < end; i++) {
    const c = buf[i]!;
    if (c < ZERO || c > NINE) return Number.NaN;
    n = n * 10 + (c - ZERO);
  }
  return negative ? -n : n;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE_MIN = BigInt(Number.MIN_SAFE_INTEGER);
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Parses an integer reply (`:`): an optional sign and decimal digits within int64, as the
 * RESP spec allows. Up to 15 digits always fit a double exactly, so only longer values pay
 * for a BigInt. Returns undefined when malformed or out of range.
 */
export function parseInteger(buf: Buffer, start: number, end: number): number | bigint | undefined {
  let i = start;
  let negative = false;
  const sign = buf[i];
  if (i < end && (sign === MINUS || sign === PLUS)) {
    negative = sign === MINUS;
    i++;
  }
  const digits = end - i;
  if (digits <= 0) return undefined;
  let n = 0;
  for (let j = i; j < end; j++) {
    const c = buf[j]!;
    if (c < ZERO || c > NINE) return undefined;
    n = n * 10 + (c - ZERO);
  }
  // `0 - n` rather than `-n` so that ":-0" yields +0, not -0.
  if (digits <= 15) return negative ? 0 - n : n;
  const big = BigInt(buf.toString('latin1', start, end));
  if (big < INT64_MIN || big > INT64_MAX) return undefined;
  return big >= SAFE_MIN && big <= SAFE_MAX ? Number(big) : big;
}

const DOUBLE_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Parses a RESP3 double (`,`), including `inf`, `-inf` and `nan`. Number() alone would accept "", " 1" and "0x1". */
export function parseDouble(buf: Buffer, start: number, end: number): number | undefined {
  const s = buf.toString('latin1', start, end);
  switch (s) {
    case 'inf':
    case '+inf':
      return Number.POSITIVE_INFINITY;
    case '-inf':
      return Number.NEGATIVE_INFINITY;
    case 'nan':
    case '-nan':
      return Number.NaN;
  }
  return DOUBLE_RE.test(s) ? Number(s) : undefined;
}

const BIGNUM_RE = /^[+-]?\d+$/;

/** Parses a RESP3 big number (`(`). BigInt() alone would accept "", " 1 " and "0x1". */
export function parseBigNumber(buf: Buffer, start: number, end: number): bigint | undefined {
  const s = buf.toString('latin1', start, end);
  return BIGNUM_RE.test(s) ? BigInt(s) : undefined;
}

/** Formats a double the way our decoder (and strtod) reads it back bit-exactly. */
export function formatDouble(d: number): string {
  if (Number.isNaN(d)) return 'nan';
  if (d === Number.POSITIVE_INFINITY) return 'inf';
  if (d === Number.NEGATIVE_INFINITY) return '-inf';
  if (Object.is(d, -0)) return '-0';
  return String(d);
}
