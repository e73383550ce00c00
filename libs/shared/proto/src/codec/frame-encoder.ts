// The hand-written encoder for the hot frames (Open, ResponseHead, Data, End, Reset,
// WindowUpdate and Batches of them). It writes exactly the bytes protobuf-es's toBinary writes
// (fields in number order, zero values left out, unknown fields last), in two passes: the
// first computes every length, the second writes into a buffer of exactly that size. No
// intermediate buffers, no payload copies beyond the one into the output, and with
// `encodeFrameVectored` not even that. Cold frames (Hello, Welcome, Ping, Pong, GoAway,
// Accepted) are encoded by protobuf-es and embedded.
import { type DescMessage, type MessageShape, toBinary } from '@bufbuild/protobuf';
import {
  AcceptedSchema,
  type Batch,
  type Data,
  type End,
  type ExtensionRequestHead,
  type Frame,
  GoAwaySchema,
  type Header,
  HelloSchema,
  type HttpRequestHead,
  type Open,
  PingSchema,
  PongSchema,
  type RedisRequestHead,
  RegistrationSchema,
  type Reset,
  type ResponseHead,
  WelcomeSchema,
  type WindowUpdate,
} from '../gen/pullplane/tunnel/v1/tunnel_pb.js';
import { utf8Length, writeUtf8 } from './utf8.js';

interface UnknownField {
  no: number;
  wireType: number;
  data: Uint8Array;
}

/** In vectored output, bytes fields at least this long are passed as views, not copied. */
export const DEFAULT_MIN_VIEW_BYTES = 4096;

// ---- pass 1: lengths ---------------------------------------------------------------------
// Lengths of nested messages and strings, in the order pass 2 needs them (pre-order).
// Encoding is synchronous and never re-entered, so one scratch array serves every call.
const lengths: number[] = [];
let top = 0;
// Cold messages encoded by protobuf-es during pass 1, in order.
const colds: Uint8Array[] = [];
let coldTop = 0;
// Bytes that vectored output passes as views (fields of at least `minView` bytes).
let viewed = 0;
let minView = Number.POSITIVE_INFINITY;

function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

function uint32(v: number, field: string): number {
  if (v >>> 0 !== v)
    throw new Error(`cannot encode field pullplane.tunnel.v1.${field}: invalid uint32: ${v}`);
  return varintSize(v);
}

/** Records a nested message's length in the slot reserved before it was measured. */
function nested(slot: number, size: number): number {
  lengths[slot] = size;
  return 1 + varintSize(size) + size;
}

function str(s: string): number {
  const n = utf8Length(s);
  lengths[top++] = n;
  return 1 + varintSize(n) + n;
}

function bytes(b: Uint8Array): number {
  const n = b.byteLength;
  if (n >= minView) viewed += n;
  return 1 + varintSize(n) + n;
}

function unknownSize(fields: UnknownField[]): number {
  let n = 0;
  for (const f of fields) n += varintSize(((f.no << 3) | f.wireType) >>> 0) + f.data.byteLength;
  return n;
}

function sizeHeader(h: Header): number {
  let n = 0;
  if (h.name !== '') n += str(h.name);
  if (h.value !== '') n += str(h.value);
  if (h.$unknown) n += unknownSize(h.$unknown);
  return n;
}

function sizeHttp(m: HttpRequestHead): number {
  let n = 0;
  if (m.method !== '') n += str(m.method);
  if (m.path !== '') n += str(m.path);
  for (const h of m.headers) n += nested(top++, sizeHeader(h));
  if (m.upgrade !== '') n += str(m.upgrade);
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeExtension(m: ExtensionRequestHead): number {
  let n = 0;
  if (m.name !== '') n += str(m.name);
  if (m.http) n += nested(top++, sizeHttp(m.http));
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeRedis(m: RedisRequestHead): number {
  let n = 0;
  for (const a of m.args) n += bytes(a);
  if (m.respVersion !== 0) n += 1 + uint32(m.respVersion, 'RedisRequestHead.resp_version');
  if (m.pipeline) n += 2;
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeOpen(m: Open): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'Open.stream_id');
  if (m.head.case === 'http') n += nested(top++, sizeHttp(m.head.value));
  else if (m.head.case === 'redis') n += nested(top++, sizeRedis(m.head.value));
  if (m.agent !== '') n += str(m.agent);
  if (m.requestId !== '') n += str(m.requestId);
  if (m.hasBody) n += 2;
  if (m.body.byteLength > 0) n += bytes(m.body);
  if (m.timeoutMs !== 0) n += 1 + uint32(m.timeoutMs, 'Open.timeout_ms');
  if (m.traceparent !== '') n += str(m.traceparent);
  if (m.tracestate !== '') n += str(m.tracestate);
  if (m.head.case === 'extension') n += nested(top++, sizeExtension(m.head.value));
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeResponseHead(m: ResponseHead): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'ResponseHead.stream_id');
  if (m.status !== 0) n += 1 + uint32(m.status, 'ResponseHead.status');
  for (const h of m.headers) n += nested(top++, sizeHeader(h));
  if (m.endStream) n += 2;
  if (m.body.byteLength > 0) n += bytes(m.body);
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeData(m: Data): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'Data.stream_id');
  if (m.chunk.byteLength > 0) n += bytes(m.chunk);
  if (m.endStream) n += 2;
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeEnd(m: End): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'End.stream_id');
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeReset(m: Reset): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'Reset.stream_id');
  const code = m.code as number;
  if (code !== 0) {
    if ((code | 0) !== code)
      throw new Error(`cannot encode field pullplane.tunnel.v1.Reset.code: invalid int32: ${code}`);
    // Negative enum values are sign-extended to ten bytes, as protobuf requires.
    n += 1 + (code < 0 ? 10 : varintSize(code));
  }
  if (m.message !== '') n += str(m.message);
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeWindowUpdate(m: WindowUpdate): number {
  let n = 0;
  if (m.streamId !== 0) n += 1 + uint32(m.streamId, 'WindowUpdate.stream_id');
  if (m.increment !== 0) n += 1 + uint32(m.increment, 'WindowUpdate.increment');
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function sizeBatch(m: Batch): number {
  let n = 0;
  for (const f of m.frames) n += nested(top++, sizeFrame(f));
  if (m.$unknown) n += unknownSize(m.$unknown);
  return n;
}

function cold<Desc extends DescMessage>(schema: Desc, value: MessageShape<Desc>): number {
  const encoded = toBinary(schema, value);
  colds[coldTop++] = encoded;
  return 1 + varintSize(encoded.byteLength) + encoded.byteLength;
}

function sizeFrame(f: Frame): number {
  const k = f.kind;
  let n = 0;
  switch (k.case) {
    case undefined:
      break;
    case 'open':
      n = nested(top++, sizeOpen(k.value));
      break;
    case 'responseHead':
      n = nested(top++, sizeResponseHead(k.value));
      break;
    case 'data':
      n = nested(top++, sizeData(k.value));
      break;
    case 'end':
      n = nested(top++, sizeEnd(k.value));
      break;
    case 'reset':
      n = nested(top++, sizeReset(k.value));
      break;
    case 'windowUpdate':
      n = nested(top++, sizeWindowUpdate(k.value));
      break;
    case 'batch':
      n = nested(top++, sizeBatch(k.value));
      break;
    case 'hello':
      n = cold(HelloSchema, k.value);
      break;
    case 'welcome':
      n = cold(WelcomeSchema, k.value);
      break;
    case 'ping':
      n = cold(PingSchema, k.value);
      break;
    case 'pong':
      n = cold(PongSchema, k.value);
      break;
    case 'goAway':
      n = cold(GoAwaySchema, k.value);
      break;
    case 'accepted':
      n = cold(AcceptedSchema, k.value);
      break;
    case 'registration':
      n = cold(RegistrationSchema, k.value);
      break;
  }
  if (f.$unknown) n += unknownSize(f.$unknown);
  return n;
}

// ---- pass 2: bytes -----------------------------------------------------------------------
let out: Buffer = Buffer.alloc(0);
let pos = 0;
let slot = 0;
let coldSlot = 0;
// Vectored output: finished pieces, and where the current header segment of `out` starts.
let pieces: Uint8Array[] | undefined;
let segmentStart = 0;

function varint(v: number): void {
  while (v > 0x7f) {
    out[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[pos++] = v;
}

function wString(tag: number, s: string): void {
  out[pos++] = tag;
  const n = lengths[slot++]!;
  varint(n);
  pos = writeUtf8(out, pos, s, n);
}

function wBytes(tag: number, b: Uint8Array): void {
  out[pos++] = tag;
  const n = b.byteLength;
  varint(n);
  if (pieces !== undefined && n >= minView) {
    pieces.push(out.subarray(segmentStart, pos), b);
    segmentStart = pos;
    return;
  }
  out.set(b, pos);
  pos += n;
}

function wNested(tag: number): void {
  out[pos++] = tag;
  varint(lengths[slot++]!);
}

function wUnknown(fields: UnknownField[]): void {
  for (const f of fields) {
    varint(((f.no << 3) | f.wireType) >>> 0);
    out.set(f.data, pos);
    pos += f.data.byteLength;
  }
}

function wHeader(h: Header): void {
  if (h.name !== '') wString(0x0a, h.name);
  if (h.value !== '') wString(0x12, h.value);
  if (h.$unknown) wUnknown(h.$unknown);
}

function wHttp(m: HttpRequestHead): void {
  if (m.method !== '') wString(0x0a, m.method);
  if (m.path !== '') wString(0x12, m.path);
  for (const h of m.headers) {
    wNested(0x1a);
    wHeader(h);
  }
  if (m.upgrade !== '') wString(0x22, m.upgrade);
  if (m.$unknown) wUnknown(m.$unknown);
}

function wExtension(m: ExtensionRequestHead): void {
  if (m.name !== '') wString(0x0a, m.name);
  if (m.http) {
    wNested(0x12);
    wHttp(m.http);
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wRedis(m: RedisRequestHead): void {
  for (const a of m.args) wBytes(0x0a, a);
  if (m.respVersion !== 0) {
    out[pos++] = 0x10;
    varint(m.respVersion);
  }
  if (m.pipeline) {
    out[pos++] = 0x18;
    out[pos++] = 1;
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wOpen(m: Open): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  if (m.head.case === 'http') {
    wNested(0x12);
    wHttp(m.head.value);
  } else if (m.head.case === 'redis') {
    wNested(0x1a);
    wRedis(m.head.value);
  }
  if (m.agent !== '') wString(0x22, m.agent);
  if (m.requestId !== '') wString(0x2a, m.requestId);
  if (m.hasBody) {
    out[pos++] = 0x38;
    out[pos++] = 1;
  }
  if (m.body.byteLength > 0) wBytes(0x42, m.body);
  if (m.timeoutMs !== 0) {
    out[pos++] = 0x48;
    varint(m.timeoutMs);
  }
  if (m.traceparent !== '') wString(0x52, m.traceparent);
  if (m.tracestate !== '') wString(0x5a, m.tracestate);
  if (m.head.case === 'extension') {
    wNested(0x62);
    wExtension(m.head.value);
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wResponseHead(m: ResponseHead): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  if (m.status !== 0) {
    out[pos++] = 0x10;
    varint(m.status);
  }
  for (const h of m.headers) {
    wNested(0x1a);
    wHeader(h);
  }
  if (m.endStream) {
    out[pos++] = 0x20;
    out[pos++] = 1;
  }
  if (m.body.byteLength > 0) wBytes(0x2a, m.body);
  if (m.$unknown) wUnknown(m.$unknown);
}

function wData(m: Data): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  if (m.chunk.byteLength > 0) wBytes(0x12, m.chunk);
  if (m.endStream) {
    out[pos++] = 0x18;
    out[pos++] = 1;
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wStreamIdOnly(m: End): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wReset(m: Reset): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  let code = m.code as number;
  if (code !== 0) {
    out[pos++] = 0x10;
    if (code > 0) varint(code);
    else {
      for (let i = 0; i < 9; i++) {
        out[pos++] = (code & 0x7f) | 0x80;
        code >>= 7;
      }
      out[pos++] = 1;
    }
  }
  if (m.message !== '') wString(0x1a, m.message);
  if (m.$unknown) wUnknown(m.$unknown);
}

function wWindowUpdate(m: WindowUpdate): void {
  if (m.streamId !== 0) {
    out[pos++] = 0x08;
    varint(m.streamId);
  }
  if (m.increment !== 0) {
    out[pos++] = 0x10;
    varint(m.increment);
  }
  if (m.$unknown) wUnknown(m.$unknown);
}

function wCold(tag: number): void {
  const encoded = colds[coldSlot++]!;
  out[pos++] = tag;
  varint(encoded.byteLength);
  out.set(encoded, pos);
  pos += encoded.byteLength;
}

// Frame field tags: field number << 3 | length-delimited.
const TAG = {
  hello: 0x0a,
  welcome: 0x12,
  open: 0x1a,
  responseHead: 0x22,
  data: 0x2a,
  end: 0x32,
  reset: 0x3a,
  windowUpdate: 0x42,
  ping: 0x4a,
  pong: 0x52,
  goAway: 0x5a,
  accepted: 0x62,
  batch: 0x6a,
  registration: 0x72,
} as const;

function wFrame(f: Frame): void {
  const k = f.kind;
  switch (k.case) {
    case undefined:
      break;
    case 'open':
      wNested(TAG.open);
      wOpen(k.value);
      break;
    case 'responseHead':
      wNested(TAG.responseHead);
      wResponseHead(k.value);
      break;
    case 'data':
      wNested(TAG.data);
      wData(k.value);
      break;
    case 'end':
      wNested(TAG.end);
      wStreamIdOnly(k.value);
      break;
    case 'reset':
      wNested(TAG.reset);
      wReset(k.value);
      break;
    case 'windowUpdate':
      wNested(TAG.windowUpdate);
      wWindowUpdate(k.value);
      break;
    case 'batch':
      wNested(TAG.batch);
      for (const inner of k.value.frames) {
        wNested(0x0a);
        wFrame(inner);
      }
      if (k.value.$unknown) wUnknown(k.value.$unknown);
      break;
    default:
      wCold(TAG[k.case]);
  }
  if (f.$unknown) wUnknown(f.$unknown);
}

// ---- public API --------------------------------------------------------------------------
// The last frame measured, so that encodedFrameLength() then encodeFrameInto() measure once.
let planned: Frame | undefined;
let plannedLength = 0;
let plannedMinView = Number.POSITIVE_INFINITY;

function plan(f: Frame, viewFrom: number): number {
  if (planned === f && plannedMinView === viewFrom) return plannedLength;
  top = 0;
  coldTop = 0;
  viewed = 0;
  minView = viewFrom;
  planned = undefined;
  plannedLength = sizeFrame(f);
  planned = f;
  plannedMinView = viewFrom;
  return plannedLength;
}

function write(f: Frame, target: Buffer, at: number, expectedEnd: number): void {
  out = target;
  pos = at;
  slot = 0;
  coldSlot = 0;
  try {
    wFrame(f);
    if (pos !== expectedEnd) throw new Error('frame codec: the frame changed between measuring and writing');
  } finally {
    planned = undefined;
    out = EMPTY;
    pieces = undefined;
    if (coldTop > 0) colds.length = 0;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * The encoded length of `f` in bytes. Measuring is half the work of encoding: a following
 * encodeFrameInto() of the same, unchanged frame reuses it.
 */
export function encodedFrameLength(f: Frame): number {
  return plan(f, Number.POSITIVE_INFINITY);
}

/**
 * Encodes `f` into `target` at `offset` (so a transport can put its own prefix, such as gRPC's
 * five-byte message header, in front of the frame in one buffer) and returns the end offset.
 */
export function encodeFrameInto(f: Frame, target: Uint8Array, offset = 0): number {
  const n = plan(f, Number.POSITIVE_INFINITY);
  if (!Number.isInteger(offset) || offset < 0 || offset + n > target.byteLength) {
    planned = undefined;
    throw new RangeError(`frame of ${n} bytes does not fit at offset ${offset} of ${target.byteLength}`);
  }
  const buf = Buffer.isBuffer(target)
    ? target
    : Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  write(f, buf, offset, offset + n);
  return offset + n;
}

/**
 * Encodes `f` into a new buffer of exactly its size plus `prefix` free bytes at the front.
 * Small buffers come from Node's shared allocation pool.
 */
export function encodeFrameFast(f: Frame, prefix = 0): Buffer {
  const n = plan(f, Number.POSITIVE_INFINITY);
  const buf = Buffer.allocUnsafe(prefix + n);
  write(f, buf, prefix, prefix + n);
  return buf;
}

/**
 * Encodes `f` as a list of pieces for a vectored write (writev): the framing bytes in one
 * new buffer, and every bytes field of at least `minViewBytes` (Data chunks, inline bodies)
 * as the caller's own view, never copied. The first piece starts with `reserve` free bytes
 * for a transport prefix. Pieces must be written before the payload views are reused.
 */
export function encodeFrameVectored(
  f: Frame,
  opts: { reserve?: number; minViewBytes?: number } = {},
): Uint8Array[] {
  const reserve = opts.reserve ?? 0;
  const n = plan(f, Math.max(1, opts.minViewBytes ?? DEFAULT_MIN_VIEW_BYTES));
  const framing = reserve + n - viewed;
  const buf = Buffer.allocUnsafe(framing);
  const result: Uint8Array[] = [];
  pieces = result;
  segmentStart = 0;
  write(f, buf, reserve, framing);
  if (segmentStart < framing || result.length === 0) result.push(buf.subarray(segmentStart, framing));
  return result;
}
