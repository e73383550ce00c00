/**
 * SPDY/3 framing (draft-mbelshe-httpbis-spdy-00, as Kubernetes' moby/spdystream speaks it under
 * the name "SPDY/3.1"): frame encoders and an incremental parser. Header blocks stay compressed
 * here; spdy-header-codec.ts owns the zlib contexts.
 */

export const SPDY_VERSION = 3;

export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes. */
export const RstStatus = {
  ProtocolError: 1,
  InvalidStream: 2,
  RefusedStream: 3,
  UnsupportedVersion: 4,
  Cancel: 5,
  InternalError: 6,
  FlowControlError: 7,
  StreamInUse: 8,
  StreamAlreadyClosed: 9,
  FrameTooLarge: 11,
} as const;

export const GoAwayStatus = { Ok: 0, ProtocolError: 1, InternalError: 2 } as const;

/** Largest payload a frame's 24-bit length can describe. */
export const MAX_FRAME_PAYLOAD = 0xffffff;

export interface SettingsEntry {
  flags: number;
  id: number;
  value: number;
}

/**
 * One parsed frame. DATA payloads are delivered as they arrive: a frame may come as several
 * `data` pieces, and only the last piece of a frame carries its FIN.
 */
export type SpdyFrame =
  | { type: 'data'; streamId: number; fin: boolean; data: Buffer }
  | {
      type: 'syn_stream';
      streamId: number;
      associatedTo: number;
      priority: number;
      flags: number;
      headerBlock: Buffer;
    }
  | { type: 'syn_reply'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'headers'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'rst_stream'; streamId: number; status: number }
  | { type: 'settings'; flags: number; entries: SettingsEntry[] }
  | { type: 'ping'; id: number }
  | { type: 'goaway'; lastGoodStreamId: number; status: number }
  | { type: 'window_update'; streamId: number; delta: number }
  | { type: 'unknown'; frameType: number; flags: number; length: number };

/** A peer broke the framing: the connection cannot continue (GOAWAY PROTOCOL_ERROR). */
export class SpdyProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SpdyProtocolError';
  }
}

function controlHeader(type: number, flags: number, length: number): Buffer {
  if (length > MAX_FRAME_PAYLOAD) throw new RangeError(`SPDY control frame too large: ${length}`);
  const b = Buffer.alloc(8);
  b.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  b.writeUInt16BE(type, 2);
  b.writeUInt32BE(((flags & 0xff) << 24) | length, 4);
  return b;
}

function checkStreamId(id: number): void {
  if (!Number.isInteger(id) || id <= 0 || id > 0x7fffffff)
    throw new RangeError(`invalid SPDY stream id ${id}`);
}

/** DATA frame header (8 bytes); the payload follows it on the wire. */
export function encodeDataHeader(streamId: number, length: number, fin: boolean): Buffer {
  checkStreamId(streamId);
  if (length > MAX_FRAME_PAYLOAD) throw new RangeError(`SPDY data frame too large: ${length}`);
  const b = Buffer.alloc(8);
  b.writeUInt32BE(streamId, 0);
  b.writeUInt32BE(((fin ? FLAG_FIN : 0) << 24) | length, 4);
  return b;
}

export function encodeDataFrame(streamId: number, data: Buffer, fin: boolean): Buffer {
  return Buffer.concat([encodeDataHeader(streamId, data.length, fin), data]);
}

export function encodeSynStream(
  streamId: number,
  headerBlock: Buffer,
  opts: { flags?: number; associatedTo?: number; priority?: number } = {},
): Buffer {
  checkStreamId(streamId);
  const body = Buffer.alloc(10);
  body.writeUInt32BE(streamId, 0);
  body.writeUInt32BE(opts.associatedTo ?? 0, 4);
  body[8] = ((opts.priority ?? 0) & 0x7) << 5;
  body[9] = 0; // credential slot, unused
  return Buffer.concat([
    controlHeader(FrameType.SynStream, opts.flags ?? 0, 10 + headerBlock.length),
    body,
    headerBlock,
  ]);
}

function streamHeaderFrame(type: number, streamId: number, headerBlock: Buffer, flags: number): Buffer {
  checkStreamId(streamId);
  const id = Buffer.alloc(4);
  id.writeUInt32BE(streamId);
  return Buffer.concat([controlHeader(type, flags, 4 + headerBlock.length), id, headerBlock]);
}

export function encodeSynReply(streamId: number, headerBlock: Buffer, flags = 0): Buffer {
  return streamHeaderFrame(FrameType.SynReply, streamId, headerBlock, flags);
}

export function encodeHeaders(streamId: number, headerBlock: Buffer, flags = 0): Buffer {
  return streamHeaderFrame(FrameType.Headers, streamId, headerBlock, flags);
}

function twoWords(type: number, a: number, b: number): Buffer {
  const body = Buffer.alloc(8);
  body.writeUInt32BE(a >>> 0, 0);
  body.writeUInt32BE(b >>> 0, 4);
  return Buffer.concat([controlHeader(type, 0, 8), body]);
}

export function encodeRstStream(streamId: number, status: number): Buffer {
  checkStreamId(streamId);
  return twoWords(FrameType.RstStream, streamId, status);
}

export function encodeGoAway(lastGoodStreamId: number, status: number): Buffer {
  return twoWords(FrameType.GoAway, lastGoodStreamId, status);
}

export function encodeWindowUpdate(streamId: number, delta: number): Buffer {
  return twoWords(FrameType.WindowUpdate, streamId, delta);
}

export function encodePing(id: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeUInt32BE(id >>> 0);
  return Buffer.concat([controlHeader(FrameType.Ping, 0, 4), body]);
}

export function encodeSettings(entries: SettingsEntry[], flags = 0): Buffer {
  const body = Buffer.alloc(4 + entries.length * 8);
  body.writeUInt32BE(entries.length, 0);
  entries.forEach((e, i) => {
    body.writeUInt32BE((((e.flags & 0xff) << 24) | (e.id & 0xffffff)) >>> 0, 4 + i * 8);
    body.writeUInt32BE(e.value >>> 0, 8 + i * 8);
  });
  return Buffer.concat([controlHeader(FrameType.Settings, flags, body.length), body]);
}

export interface FrameParserOptions {
  /** Control frames (header blocks included) longer than this are a protocol error (default 1 MiB). */
  maxControlFrameBytes?: number | undefined;
}

/**
 * Incremental SPDY/3 frame parser: push() any split of the byte stream, frames come out through
 * `onFrame` in order. Throws SpdyProtocolError on malformed input; the parser is then unusable.
 */
export class SpdyFrameParser {
  private readonly maxControl: number;
  private header = Buffer.alloc(8);
  private headerFill = 0;
  /** Remaining payload bytes of the DATA frame being streamed. */
  private dataLeft = 0;
  private dataStream = 0;
  private dataFin = false;
  private inData = false;
  /** Payload of the control frame being collected. */
  private control: Buffer[] = [];
  private controlLeft = 0;
  private controlType = 0;
  private controlFlags = 0;
  private inControl = false;
  private failed: SpdyProtocolError | undefined;

  constructor(
    private readonly onFrame: (frame: SpdyFrame) => void,
    opts: FrameParserOptions = {},
  ) {
    this.maxControl = opts.maxControlFrameBytes ?? 1024 * 1024;
  }

  push(chunk: Buffer): void {
    if (this.failed) throw this.failed;
    try {
      this.consume(chunk);
    } catch (err) {
      if (err instanceof SpdyProtocolError) this.failed = err;
      throw err;
    }
  }

  private consume(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.inData) {
        const n = Math.min(this.dataLeft, chunk.length - off);
        this.dataLeft -= n;
        const piece = chunk.subarray(off, off + n);
        off += n;
        const done = this.dataLeft === 0;
        if (done) this.inData = false;
        this.onFrame({ type: 'data', streamId: this.dataStream, fin: done && this.dataFin, data: piece });
        continue;
      }
      if (this.inControl) {
        const n = Math.min(this.controlLeft, chunk.length - off);
        this.control.push(chunk.subarray(off, off + n));
        this.controlLeft -= n;
        off += n;
        if (this.controlLeft === 0) this.finishControl();
        continue;
      }
      const n = Math.min(8 - this.headerFill, chunk.length - off);
      chunk.copy(this.header, this.headerFill, off, off + n);
      this.headerFill += n;
      off += n;
      if (this.headerFill === 8) this.startFrame();
    }
  }

  private startFrame(): void {
    this.headerFill = 0;
    const h = this.header;
    const length = h.readUInt32BE(4) & 0xffffff;
    const flags = h[4]!;
    if ((h[0]! & 0x80) === 0) {
      const streamId = h.readUInt32BE(0) & 0x7fffffff;
      if (streamId === 0) throw new SpdyProtocolError('DATA frame on stream 0');
      this.dataStream = streamId;
      this.dataFin = (flags & FLAG_FIN) !== 0;
      this.dataLeft = length;
      if (length === 0) this.onFrame({ type: 'data', streamId, fin: this.dataFin, data: Buffer.alloc(0) });
      else this.inData = true;
      return;
    }
    const version = h.readUInt16BE(0) & 0x7fff;
    if (version !== SPDY_VERSION) throw new SpdyProtocolError(`unsupported SPDY version ${version}`);
    if (length > this.maxControl) {
      throw new SpdyProtocolError(`control frame of ${length} bytes exceeds the limit of ${this.maxControl}`);
    }
    this.controlType = h.readUInt16BE(2);
    this.controlFlags = flags;
    this.control = [];
    this.controlLeft = length;
    if (length === 0) this.finishControl();
    else this.inControl = true;
  }

  private finishControl(): void {
    this.inControl = false;
    const body = this.control.length === 1 ? this.control[0]! : Buffer.concat(this.control);
    this.control = [];
    this.onFrame(decodeControl(this.controlType, this.controlFlags, body));
  }
}

function need(body: Buffer, min: number, what: string): void {
  if (body.length < min) throw new SpdyProtocolError(`${what} frame too short (${body.length} bytes)`);
}

function exactly(body: Buffer, len: number, what: string): void {
  if (body.length !== len)
    throw new SpdyProtocolError(`${what} frame must be ${len} bytes, got ${body.length}`);
}

function streamIdOf(body: Buffer, what: string): number {
  const id = body.readUInt32BE(0) & 0x7fffffff;
  if (id === 0) throw new SpdyProtocolError(`${what} frame on stream 0`);
  return id;
}

/** Decodes a complete control frame payload (header blocks are copied, still compressed). */
function decodeControl(type: number, flags: number, body: Buffer): SpdyFrame {
  switch (type) {
    case FrameType.SynStream:
      need(body, 10, 'SYN_STREAM');
      return {
        type: 'syn_stream',
        streamId: streamIdOf(body, 'SYN_STREAM'),
        associatedTo: body.readUInt32BE(4) & 0x7fffffff,
        priority: body[8]! >> 5,
        flags,
        headerBlock: Buffer.from(body.subarray(10)),
      };
    case FrameType.SynReply:
    case FrameType.Headers: {
      const what = type === FrameType.SynReply ? 'SYN_REPLY' : 'HEADERS';
      need(body, 4, what);
      return {
        type: type === FrameType.SynReply ? 'syn_reply' : 'headers',
        streamId: streamIdOf(body, what),
        flags,
        headerBlock: Buffer.from(body.subarray(4)),
      };
    }
    case FrameType.RstStream: {
      exactly(body, 8, 'RST_STREAM');
      const status = body.readUInt32BE(4);
      if (status === 0) throw new SpdyProtocolError('RST_STREAM with status 0');
      return { type: 'rst_stream', streamId: streamIdOf(body, 'RST_STREAM'), status };
    }
    case FrameType.Settings: {
      need(body, 4, 'SETTINGS');
      const count = body.readUInt32BE(0);
      if (body.length !== 4 + count * 8) {
        throw new SpdyProtocolError(`SETTINGS frame of ${body.length} bytes cannot hold ${count} entries`);
      }
      const entries: SettingsEntry[] = [];
      for (let i = 0; i < count; i++) {
        const word = body.readUInt32BE(4 + i * 8);
        entries.push({ flags: word >>> 24, id: word & 0xffffff, value: body.readUInt32BE(8 + i * 8) });
      }
      return { type: 'settings', flags, entries };
    }
    case FrameType.Ping: {
      exactly(body, 4, 'PING');
      if (flags !== 0) throw new SpdyProtocolError('PING frame with flags');
      const id = body.readUInt32BE(0);
      if (id === 0) throw new SpdyProtocolError('PING with id 0');
      return { type: 'ping', id };
    }
    case FrameType.GoAway:
      exactly(body, 8, 'GOAWAY');
      return {
        type: 'goaway',
        lastGoodStreamId: body.readUInt32BE(0) & 0x7fffffff,
        status: body.readUInt32BE(4),
      };
    case FrameType.WindowUpdate:
      exactly(body, 8, 'WINDOW_UPDATE');
      return {
        type: 'window_update',
        streamId: body.readUInt32BE(0) & 0x7fffffff,
        delta: body.readUInt32BE(4) & 0x7fffffff,
      };
    default:
      // The spec has receivers ignore control frames of unknown types.
      return { type: 'unknown', frameType: type, flags, length: body.length };
  }
}
