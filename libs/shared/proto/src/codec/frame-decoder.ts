// The hand-written decoder for the hot frames. On well-formed input it yields exactly what
// protobuf-es's fromBinary yields (same objects, same merge rules: a repeated scalar's last
// value wins, a repeated message is merged, unknown fields are kept in $unknown and written back
// by the encoder), except that bytes fields (Data chunks, inline bodies, Redis arguments) are
// views into the input and never copies. Cold frames inside are decoded by protobuf-es.
//
// On malformed input it is stricter than protobuf-es and always ends in an Error: a known field
// with the wrong wire type, a field running past the end of its message, a varint longer than
// ten bytes and invalid UTF-8 are errors. Every loop reads a tag, every tag consumes at least
// one byte, and the tags read are counted against the input length, so decoding is linear in
// the input and cannot spin.
import { type DescMessage, fromBinary, type MessageShape, mergeFromBinary } from '@bufbuild/protobuf';
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
import { readUtf8 } from './utf8.js';

/** protobuf-es's default recursion limit, so both refuse the same nesting. */
const RECURSION_LIMIT = 100;
const EMPTY_BYTES = new Uint8Array(0);

interface UnknownField {
  no: number;
  wireType: number;
  data: Uint8Array;
}

// Decoding is synchronous and never re-entered: the input and the cursor live here.
let buf: Uint8Array = EMPTY_BYTES;
let pos = 0;
let work = 0;
let workBound = 0;
let lastWork = 0;

function truncated(): Error {
  return new RangeError('premature EOF');
}

/** A uint32 varint as protobuf-es reads it: bits past 32 are dropped, at most ten bytes. */
function u32(end: number): number {
  if (pos < end) {
    const b = buf[pos]!;
    if (b < 0x80) {
      pos++;
      return b;
    }
  }
  let result = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw truncated();
    const b = buf[pos++]!;
    if (i < 4) result |= (b & 0x7f) << (7 * i);
    else if (i === 4) result |= (b & 0x0f) << 28;
    if ((b & 0x80) === 0) return result >>> 0;
  }
  throw new Error('invalid varint');
}

/** A bool varint: true when any of its 64 bits is set (protobuf-es's varint64 rules). */
function bool(end: number): boolean {
  let lo = 0;
  let hi = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw truncated();
    const b = buf[pos++]!;
    lo |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return lo !== 0;
  }
  if (pos >= end) throw truncated();
  const middle = buf[pos++]!;
  lo |= (middle & 0x0f) << 28;
  hi = (middle & 0x70) >> 4;
  if ((middle & 0x80) === 0) return lo !== 0 || hi !== 0;
  for (let shift = 3; shift <= 31; shift += 7) {
    if (pos >= end) throw truncated();
    const b = buf[pos++]!;
    hi |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return lo !== 0 || hi !== 0;
  }
  throw new Error('invalid varint');
}

function tag(end: number): number {
  const start = pos;
  const t = u32(end);
  // Counted once read: a tag takes at least one byte, so this can only trip on a decoder bug.
  if (++work > workBound) throw new Error('frame decoder exceeded its work bound');
  const read = pos - start;
  if (read > 5 || (read === 5 && buf[pos - 1]! > 0x0f))
    throw new Error('illegal tag: varint overflows uint32');
  const no = t >>> 3;
  const wireType = t & 7;
  if (no <= 0 || wireType > 5) throw new Error(`illegal tag: field no ${no} wire type ${wireType}`);
  return t;
}

/** Reads a length prefix and returns where the length-delimited value ends. */
function delimited(end: number): number {
  const n = u32(end);
  if (n > end - pos) throw truncated();
  return pos + n;
}

function bytes(end: number): Uint8Array {
  const e = delimited(end);
  const view = buf.subarray(pos, e);
  pos = e;
  return view;
}

function string(end: number, field: string): string {
  const e = delimited(end);
  const s = readUtf8(buf, pos, e, field);
  pos = e;
  return s;
}

function depthCheck(depth: number, type: string): void {
  if (depth > RECURSION_LIMIT)
    throw new Error(
      `cannot decode ${type} from binary: maximum recursion depth of ${RECURSION_LIMIT} reached`,
    );
}

/**
 * A field this decoder does not read: an error if the number is known (wrong wire type),
 * otherwise skipped and kept in $unknown, as protobuf-es does.
 */
function other(
  m: { $unknown?: UnknownField[] | undefined },
  t: number,
  end: number,
  known: number,
  type: string,
  depth: number,
): void {
  const no = t >>> 3;
  const wireType = t & 7;
  if (no < 32 && (known >>> no) & 1)
    throw new Error(`wire type ${wireType} is wrong for field ${no} of ${type}`);
  const start = pos;
  skip(wireType, no, end, depth);
  m.$unknown ??= [];
  m.$unknown.push({ no, wireType, data: buf.subarray(start, pos) });
}

function skip(wireType: number, no: number, end: number, depth: number): void {
  switch (wireType) {
    case 0:
      for (let i = 0; ; i++) {
        if (i === 10) throw new Error('invalid varint');
        if (pos >= end) throw truncated();
        if ((buf[pos++]! & 0x80) === 0) return;
      }
    case 1:
    case 5: {
      const n = wireType === 1 ? 8 : 4;
      if (end - pos < n) throw truncated();
      pos += n;
      return;
    }
    case 2:
      pos = delimited(end);
      return;
    case 3:
      depthCheck(depth + 1, 'group');
      for (;;) {
        const t = tag(end);
        if ((t & 7) === 4) {
          if (t >>> 3 !== no) throw new Error('invalid end group tag');
          return;
        }
        skip(t & 7, t >>> 3, end, depth + 1);
      }
    default:
      throw new Error(`cant skip wire type ${wireType}`);
  }
}

// Bit masks of each message's field numbers, to tell a wrong wire type from an unknown field.
const mask = (...nos: number[]) => nos.reduce((m, n) => m | (1 << n), 0);
const HEADER_FIELDS = mask(1, 2);
const HTTP_FIELDS = mask(1, 2, 3, 4);
const EXTENSION_FIELDS = mask(1, 2);
const REDIS_FIELDS = mask(1, 2, 3);
const OPEN_FIELDS = mask(1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12);
const HEAD_FIELDS = mask(1, 2, 3, 4, 5);
const DATA_FIELDS = mask(1, 2, 3);
const STREAM_ID_ONLY = mask(1);
const RESET_FIELDS = mask(1, 2, 3);
const WINDOW_FIELDS = mask(1, 2);
const BATCH_FIELDS = mask(1);
const FRAME_FIELDS = mask(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);

function readHeader(end: number, depth: number): Header {
  depthCheck(depth, 'pullplane.tunnel.v1.Header');
  const m: Header = { $typeName: 'pullplane.tunnel.v1.Header', name: '', value: '' };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) m.name = string(end, 'Header.name');
    else if (t === 0x12) m.value = string(end, 'Header.value');
    else other(m, t, end, HEADER_FIELDS, 'Header', depth);
  }
  return m;
}

function readHttp(end: number, depth: number, into: HttpRequestHead | undefined): HttpRequestHead {
  depthCheck(depth, 'pullplane.tunnel.v1.HttpRequestHead');
  const m: HttpRequestHead = into ?? {
    $typeName: 'pullplane.tunnel.v1.HttpRequestHead',
    method: '',
    path: '',
    headers: [],
    upgrade: '',
  };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) m.method = string(end, 'HttpRequestHead.method');
    else if (t === 0x12) m.path = string(end, 'HttpRequestHead.path');
    else if (t === 0x1a) {
      const e = delimited(end);
      m.headers.push(readHeader(e, depth + 1));
    } else if (t === 0x22) m.upgrade = string(end, 'HttpRequestHead.upgrade');
    else other(m, t, end, HTTP_FIELDS, 'HttpRequestHead', depth);
  }
  return m;
}

function readExtension(
  end: number,
  depth: number,
  into: ExtensionRequestHead | undefined,
): ExtensionRequestHead {
  depthCheck(depth, 'pullplane.tunnel.v1.ExtensionRequestHead');
  const m: ExtensionRequestHead = into ?? {
    $typeName: 'pullplane.tunnel.v1.ExtensionRequestHead',
    name: '',
  };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) m.name = string(end, 'ExtensionRequestHead.name');
    else if (t === 0x12) {
      const e = delimited(end);
      m.http = readHttp(e, depth + 1, m.http);
    } else other(m, t, end, EXTENSION_FIELDS, 'ExtensionRequestHead', depth);
  }
  return m;
}

function readRedis(end: number, depth: number, into: RedisRequestHead | undefined): RedisRequestHead {
  depthCheck(depth, 'pullplane.tunnel.v1.RedisRequestHead');
  const m: RedisRequestHead = into ?? {
    $typeName: 'pullplane.tunnel.v1.RedisRequestHead',
    args: [],
    respVersion: 0,
    pipeline: false,
  };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) m.args.push(bytes(end));
    else if (t === 0x10) m.respVersion = u32(end);
    else if (t === 0x18) m.pipeline = bool(end);
    else other(m, t, end, REDIS_FIELDS, 'RedisRequestHead', depth);
  }
  return m;
}

function readOpen(end: number, depth: number, into: Open | undefined): Open {
  depthCheck(depth, 'pullplane.tunnel.v1.Open');
  const m: Open = into ?? {
    $typeName: 'pullplane.tunnel.v1.Open',
    streamId: 0,
    head: { case: undefined },
    agent: '',
    requestId: '',
    hasBody: false,
    body: EMPTY_BYTES,
    timeoutMs: 0,
    traceparent: '',
    tracestate: '',
  };
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x08:
        m.streamId = u32(end);
        break;
      case 0x12: {
        const e = delimited(end);
        const prev = m.head.case === 'http' ? m.head.value : undefined;
        m.head = { case: 'http', value: readHttp(e, depth + 1, prev) };
        break;
      }
      case 0x1a: {
        const e = delimited(end);
        const prev = m.head.case === 'redis' ? m.head.value : undefined;
        m.head = { case: 'redis', value: readRedis(e, depth + 1, prev) };
        break;
      }
      case 0x62: {
        const e = delimited(end);
        const prev = m.head.case === 'extension' ? m.head.value : undefined;
        m.head = { case: 'extension', value: readExtension(e, depth + 1, prev) };
        break;
      }
      case 0x22:
        m.agent = string(end, 'Open.agent');
        break;
      case 0x2a:
        m.requestId = string(end, 'Open.request_id');
        break;
      case 0x38:
        m.hasBody = bool(end);
        break;
      case 0x42:
        m.body = bytes(end);
        break;
      case 0x48:
        m.timeoutMs = u32(end);
        break;
      case 0x52:
        m.traceparent = string(end, 'Open.traceparent');
        break;
      case 0x5a:
        m.tracestate = string(end, 'Open.tracestate');
        break;
      default:
        other(m, t, end, OPEN_FIELDS, 'Open', depth);
    }
  }
  return m;
}

function readResponseHead(end: number, depth: number, into: ResponseHead | undefined): ResponseHead {
  depthCheck(depth, 'pullplane.tunnel.v1.ResponseHead');
  const m: ResponseHead = into ?? {
    $typeName: 'pullplane.tunnel.v1.ResponseHead',
    streamId: 0,
    status: 0,
    headers: [],
    endStream: false,
    body: EMPTY_BYTES,
  };
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x08:
        m.streamId = u32(end);
        break;
      case 0x10:
        m.status = u32(end);
        break;
      case 0x1a: {
        const e = delimited(end);
        m.headers.push(readHeader(e, depth + 1));
        break;
      }
      case 0x20:
        m.endStream = bool(end);
        break;
      case 0x2a:
        m.body = bytes(end);
        break;
      default:
        other(m, t, end, HEAD_FIELDS, 'ResponseHead', depth);
    }
  }
  return m;
}

function readData(end: number, depth: number, into: Data | undefined): Data {
  depthCheck(depth, 'pullplane.tunnel.v1.Data');
  const m: Data = into ?? {
    $typeName: 'pullplane.tunnel.v1.Data',
    streamId: 0,
    chunk: EMPTY_BYTES,
    endStream: false,
  };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x08) m.streamId = u32(end);
    else if (t === 0x12) m.chunk = bytes(end);
    else if (t === 0x18) m.endStream = bool(end);
    else other(m, t, end, DATA_FIELDS, 'Data', depth);
  }
  return m;
}

function readEnd(end: number, depth: number, into: End | undefined): End {
  depthCheck(depth, 'pullplane.tunnel.v1.End');
  const m: End = into ?? { $typeName: 'pullplane.tunnel.v1.End', streamId: 0 };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x08) m.streamId = u32(end);
    else other(m, t, end, STREAM_ID_ONLY, 'End', depth);
  }
  return m;
}

function readReset(end: number, depth: number, into: Reset | undefined): Reset {
  depthCheck(depth, 'pullplane.tunnel.v1.Reset');
  const m: Reset = into ?? { $typeName: 'pullplane.tunnel.v1.Reset', streamId: 0, code: 0, message: '' };
  while (pos < end) {
    const t = tag(end);
    // An open enum: any int32 is kept, as protobuf-es keeps it.
    if (t === 0x08) m.streamId = u32(end);
    else if (t === 0x10) m.code = u32(end) | 0;
    else if (t === 0x1a) m.message = string(end, 'Reset.message');
    else other(m, t, end, RESET_FIELDS, 'Reset', depth);
  }
  return m;
}

function readWindowUpdate(end: number, depth: number, into: WindowUpdate | undefined): WindowUpdate {
  depthCheck(depth, 'pullplane.tunnel.v1.WindowUpdate');
  const m: WindowUpdate = into ?? {
    $typeName: 'pullplane.tunnel.v1.WindowUpdate',
    streamId: 0,
    increment: 0,
  };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x08) m.streamId = u32(end);
    else if (t === 0x10) m.increment = u32(end);
    else other(m, t, end, WINDOW_FIELDS, 'WindowUpdate', depth);
  }
  return m;
}

function readBatch(end: number, depth: number, into: Batch | undefined): Batch {
  depthCheck(depth, 'pullplane.tunnel.v1.Batch');
  const m: Batch = into ?? { $typeName: 'pullplane.tunnel.v1.Batch', frames: [] };
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) {
      const e = delimited(end);
      m.frames.push(readFrame(e, depth + 1));
    } else other(m, t, end, BATCH_FIELDS, 'Batch', depth);
  }
  return m;
}

function cold<Desc extends DescMessage>(
  schema: Desc,
  end: number,
  depth: number,
  into: MessageShape<Desc> | undefined,
): MessageShape<Desc> {
  const e = delimited(end);
  const view = buf.subarray(pos, e);
  pos = e;
  const opts = { recursionLimit: Math.max(1, RECURSION_LIMIT - depth + 1) };
  try {
    return into ? mergeFromBinary(schema, into, view, opts) : fromBinary(schema, view, opts);
  } catch (err) {
    // protobuf-es reports bad UTF-8 as the TextDecoder's TypeError: name the message instead.
    throw new Error(`invalid ${schema.typeName}: ${(err as Error).message}`);
  }
}

type KindValue<C> = Extract<Frame['kind'], { case: C }> extends { value: infer V } ? V : never;

/** The value of `f`'s oneof when its case is `c`, to merge a repeated field into. */
function same<C extends NonNullable<Frame['kind']['case']>>(f: Frame, c: C): KindValue<C> | undefined {
  return f.kind.case === c ? (f.kind.value as KindValue<C>) : undefined;
}

function readFrame(end: number, depth: number): Frame {
  depthCheck(depth, 'pullplane.tunnel.v1.Frame');
  const f: Frame = { $typeName: 'pullplane.tunnel.v1.Frame', kind: { case: undefined } };
  while (pos < end) {
    const t = tag(end);
    const d = depth + 1;
    switch (t) {
      case 0x1a:
        f.kind = { case: 'open', value: readOpen(delimited(end), d, same(f, 'open')) };
        break;
      case 0x22:
        f.kind = {
          case: 'responseHead',
          value: readResponseHead(delimited(end), d, same(f, 'responseHead')),
        };
        break;
      case 0x2a:
        f.kind = { case: 'data', value: readData(delimited(end), d, same(f, 'data')) };
        break;
      case 0x32:
        f.kind = { case: 'end', value: readEnd(delimited(end), d, same(f, 'end')) };
        break;
      case 0x3a:
        f.kind = { case: 'reset', value: readReset(delimited(end), d, same(f, 'reset')) };
        break;
      case 0x42:
        f.kind = {
          case: 'windowUpdate',
          value: readWindowUpdate(delimited(end), d, same(f, 'windowUpdate')),
        };
        break;
      case 0x6a:
        f.kind = { case: 'batch', value: readBatch(delimited(end), d, same(f, 'batch')) };
        break;
      case 0x0a:
        f.kind = { case: 'hello', value: cold(HelloSchema, end, d, same(f, 'hello')) };
        break;
      case 0x12:
        f.kind = { case: 'welcome', value: cold(WelcomeSchema, end, d, same(f, 'welcome')) };
        break;
      case 0x4a:
        f.kind = { case: 'ping', value: cold(PingSchema, end, d, same(f, 'ping')) };
        break;
      case 0x52:
        f.kind = { case: 'pong', value: cold(PongSchema, end, d, same(f, 'pong')) };
        break;
      case 0x5a:
        f.kind = { case: 'goAway', value: cold(GoAwaySchema, end, d, same(f, 'goAway')) };
        break;
      case 0x62:
        f.kind = { case: 'accepted', value: cold(AcceptedSchema, end, d, same(f, 'accepted')) };
        break;
      case 0x72:
        f.kind = {
          case: 'registration',
          value: cold(RegistrationSchema, end, d, same(f, 'registration')),
        };
        break;
      default:
        other(f, t, end, FRAME_FIELDS, 'Frame', depth);
    }
  }
  return f;
}

/**
 * Decodes one Frame message. Bytes fields are views into `bytes`: the caller must not reuse
 * the input buffer while the frame is in use.
 */
export function decodeFrameFast(bytes: Uint8Array): Frame {
  buf = bytes;
  pos = 0;
  work = 0;
  workBound = bytes.byteLength;
  try {
    return readFrame(bytes.byteLength, 1);
  } finally {
    lastWork = work;
    buf = EMPTY_BYTES;
  }
}

/**
 * Tags read by the last decodeFrameFast() call: the decoder's unit of work, never more than
 * the input's length (each tag takes at least one byte). Tests use it to show decoding is
 * linear without timing anything.
 */
export function lastDecodeWork(): number {
  return lastWork;
}
