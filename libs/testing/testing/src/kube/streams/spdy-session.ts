import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import {
  encodeDataFrame,
  encodeGoAway,
  encodePing,
  encodeRstStream,
  encodeSynReply,
  encodeSynStream,
  FLAG_FIN,
  FLAG_UNIDIRECTIONAL,
  GoAwayStatus,
  RstStatus,
  type SpdyFrame,
  SpdyFrameParser,
  SpdyProtocolError,
} from './spdy-frames.js';
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  HeaderCompressor,
  HeaderDecompressor,
  type SpdyHeaders,
} from './spdy-header-codec.js';

export interface SpdySessionOptions {
  /** The server answers streams with odd ids and opens even ones; the client the other way round. */
  role: 'server' | 'client';
  maxControlFrameBytes?: number | undefined;
  maxHeaderBlockBytes?: number | undefined;
  /** Largest DATA frame written (default 32 KiB, the buffer Go's io.Copy writes with). */
  maxDataFrameBytes?: number | undefined;
  /** Streams the peer may have open at once; more are refused (default 1000). */
  maxPeerStreams?: number | undefined;
}

type HeaderInput = Record<string, string | readonly string[]> | SpdyHeaders;

/**
 * A SPDY/3 session over any byte duplex (a TCP socket, or a WebSocket carrying a tunnelled
 * connection), as Kubernetes' spdystream runs it: streams are opened with SYN_STREAM and accepted
 * with SYN_REPLY, half-closed with an empty FIN frame, cancelled with RST_STREAM; PINGs from the
 * peer are echoed; GOAWAY ends the session.
 *
 * Flow control is the transport's, as in spdystream, which keeps no SPDY/3.1 windows (it ignores
 * WINDOW_UPDATE and never sends one, so a sender waiting for window would stall a real client after
 * 64 KiB): a stream whose reader falls behind pauses the transport, and writes wait for it to drain.
 */
export class SpdySession extends EventEmitter {
  readonly streams = new Map<number, SpdyStream>();
  /** Why the session failed, when it did (a protocol error from the peer). */
  error: Error | undefined;
  readonly maxDataFrameBytes: number;
  private readonly parser: SpdyFrameParser;
  private readonly compressor = new HeaderCompressor();
  private readonly decompressor: HeaderDecompressor;
  private readonly maxPeerStreams: number;
  private readonly blocked = new Set<SpdyStream>();
  private readonly pings = new Map<number, () => void>();
  private nextStreamId: number;
  private nextPingId: number;
  private lastPeerStreamId = 0;
  private goAwaySent = false;
  private closedFlag = false;
  readonly closed: Promise<void>;

  constructor(
    readonly transport: Duplex,
    readonly opts: SpdySessionOptions,
  ) {
    super();
    const server = opts.role === 'server';
    this.nextStreamId = server ? 2 : 1;
    this.nextPingId = server ? 2 : 1;
    this.maxDataFrameBytes = opts.maxDataFrameBytes ?? 32 * 1024;
    this.maxPeerStreams = opts.maxPeerStreams ?? 1000;
    this.decompressor = new HeaderDecompressor(opts.maxHeaderBlockBytes);
    this.parser = new SpdyFrameParser((f) => this.onFrame(f), {
      maxControlFrameBytes: opts.maxControlFrameBytes,
    });
    this.closed = new Promise((resolve) => this.once('close', () => resolve()));
    transport.on('data', (chunk: Buffer) => {
      try {
        this.parser.push(chunk);
      } catch (err) {
        this.fail(err as Error);
      }
    });
    transport.on('end', () => this.peerEnded());
    transport.on('error', (err: Error) => {
      this.error ??= err;
    });
    transport.on('close', () => this.teardown());
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  /** Opens a stream; it is writable at once, data waits for the peer's SYN_REPLY. */
  openStream(headers: HeaderInput, opts: { fin?: boolean } = {}): SpdyStream {
    if (this.closedFlag || this.goAwaySent) throw new Error('SPDY session is closed');
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const decoded = decodeHeaderBlock(encodeHeaderBlock(headers));
    const stream = new SpdyStream(this, id, decoded, false);
    this.streams.set(id, stream);
    const block = this.compressor.compress(encodeHeaderBlock(headers));
    this.write(encodeSynStream(id, block, { flags: opts.fin ? FLAG_FIN : 0 }));
    if (opts.fin) stream.markLocalFin();
    return stream;
  }

  /** Round trip of a PING. */
  ping(): Promise<void> {
    const id = this.nextPingId;
    this.nextPingId = (this.nextPingId + 2) % 0x7fffffff || (this.opts.role === 'server' ? 2 : 1);
    return new Promise((resolve, reject) => {
      if (this.closedFlag) return reject(new Error('SPDY session is closed'));
      this.pings.set(id, resolve);
      this.write(encodePing(id));
    });
  }

  /** Graceful end: GOAWAY, then the transport's write side ends. */
  end(): void {
    if (this.closedFlag) return;
    this.goAway(GoAwayStatus.Ok);
    this.transport.end();
  }

  destroy(): void {
    this.transport.destroy();
  }

  goAway(status: number): void {
    if (this.goAwaySent || this.closedFlag) return;
    this.goAwaySent = true;
    this.write(encodeGoAway(this.lastPeerStreamId, status));
  }

  /** Writes raw frame bytes; false when the transport asks the writer to wait for 'drain'. */
  write(frame: Buffer): boolean {
    if (this.closedFlag || this.transport.destroyed || this.transport.writableEnded) return true;
    return this.transport.write(frame);
  }

  /** Calls back once the transport drained (or closed). */
  afterDrain(cb: () => void): void {
    const done = () => {
      this.transport.off('drain', done);
      this.off('close', done);
      cb();
    };
    this.transport.on('drain', done);
    this.on('close', done);
  }

  compressHeaders(headers: HeaderInput): Buffer {
    return this.compressor.compress(encodeHeaderBlock(headers));
  }

  /** A stream's reader is full: stop reading the transport until every reader has room again. */
  block(stream: SpdyStream): void {
    if (this.blocked.has(stream)) return;
    this.blocked.add(stream);
    this.transport.pause();
  }

  unblock(stream: SpdyStream): void {
    if (!this.blocked.delete(stream)) return;
    if (this.blocked.size === 0 && !this.closedFlag) this.transport.resume();
  }

  forget(stream: SpdyStream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    this.unblock(stream);
  }

  private headersOf(block: Buffer): SpdyHeaders {
    return decodeHeaderBlock(this.decompressor.decompress(block));
  }

  private isPeerId(id: number): boolean {
    return this.opts.role === 'server' ? id % 2 === 1 : id % 2 === 0;
  }

  private onFrame(frame: SpdyFrame): void {
    switch (frame.type) {
      case 'data': {
        const stream = this.streams.get(frame.streamId);
        // spdystream drops data for streams it does not know; so do we.
        if (!stream) return;
        stream.deliver(frame.data, frame.fin);
        return;
      }
      case 'syn_stream': {
        // Decode even when refusing: the compression context must follow every block.
        const headers = this.headersOf(frame.headerBlock);
        const id = frame.streamId;
        if (!this.isPeerId(id) || id <= this.lastPeerStreamId) {
          this.write(encodeRstStream(id, RstStatus.ProtocolError));
          return;
        }
        this.lastPeerStreamId = id;
        if (this.goAwaySent || this.streams.size >= this.maxPeerStreams) {
          this.write(encodeRstStream(id, RstStatus.RefusedStream));
          return;
        }
        const stream = new SpdyStream(this, id, headers, true);
        this.streams.set(id, stream);
        if (frame.flags & FLAG_UNIDIRECTIONAL) stream.markLocalFin();
        if (frame.flags & FLAG_FIN) stream.deliver(Buffer.alloc(0), true);
        this.emit('stream', stream);
        return;
      }
      case 'syn_reply': {
        const headers = this.headersOf(frame.headerBlock);
        const stream = this.streams.get(frame.streamId);
        if (!stream) return;
        stream.onReply(headers);
        if (frame.flags & FLAG_FIN) stream.deliver(Buffer.alloc(0), true);
        return;
      }
      case 'headers': {
        this.headersOf(frame.headerBlock);
        if (frame.flags & FLAG_FIN) this.streams.get(frame.streamId)?.deliver(Buffer.alloc(0), true);
        return;
      }
      case 'rst_stream':
        this.streams.get(frame.streamId)?.onReset(frame.status);
        return;
      case 'ping': {
        const ours = frame.id % 2 === (this.opts.role === 'server' ? 0 : 1);
        if (!ours) this.write(encodePing(frame.id));
        else {
          this.pings.get(frame.id)?.();
          this.pings.delete(frame.id);
        }
        return;
      }
      case 'goaway':
        // The peer reads no more: what it sent is all there will be.
        for (const stream of [...this.streams.values()]) stream.deliver(Buffer.alloc(0), true);
        this.emit('goaway', frame.status);
        this.end();
        return;
      // SETTINGS, WINDOW_UPDATE and unknown control frames change nothing (see the class comment).
      default:
        return;
    }
  }

  private fail(err: Error): void {
    if (this.closedFlag) return;
    this.error ??= err;
    this.goAway(err instanceof SpdyProtocolError ? GoAwayStatus.ProtocolError : GoAwayStatus.InternalError);
    this.transport.end();
    this.transport.destroy();
  }

  private peerEnded(): void {
    for (const stream of [...this.streams.values()]) stream.deliver(Buffer.alloc(0), true);
    if (!this.transport.writableEnded) this.transport.end();
  }

  private teardown(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    for (const stream of [...this.streams.values()]) stream.destroy();
    this.streams.clear();
    this.blocked.clear();
    for (const resolve of this.pings.values()) resolve();
    this.pings.clear();
    this.emit('close');
  }
}

/** One SPDY stream as a Node duplex: reads are the peer's DATA, writes become DATA frames. */
export class SpdyStream extends Duplex {
  private localFin = false;
  private remoteFin = false;
  private wasReset = false;
  private replied: boolean;
  private readonly replyWaiters: Array<() => void> = [];
  /** The RST_STREAM status the peer sent, if it reset the stream. */
  resetStatus: number | undefined;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    /** The SYN_STREAM headers. */
    readonly headers: SpdyHeaders,
    /** Opened by the peer. */
    readonly fromPeer: boolean,
  ) {
    super({ allowHalfOpen: true });
    // The peer's own streams may carry data before we reply; ours wait for the peer's SYN_REPLY.
    this.replied = fromPeer;
    // A write after the peer went away fails; writers learn it from 'close' (see process-io's
    // write()), and an unheard 'error' must not take the whole server down.
    this.on('error', () => {});
  }

  /** Accepts a stream the peer opened (SYN_REPLY). */
  reply(headers: HeaderInput = {}): void {
    this.session.write(encodeSynReply(this.id, this.session.compressHeaders(headers)));
  }

  /** Cancels the stream with RST_STREAM. */
  reset(status: number = RstStatus.Cancel): void {
    if (this.wasReset) return;
    this.wasReset = true;
    this.session.write(encodeRstStream(this.id, status));
    this.destroy();
  }

  /** Resolves once the peer accepted a stream this side opened. */
  whenReplied(): Promise<void> {
    if (this.replied) return Promise.resolve();
    return new Promise((resolve) => this.replyWaiters.push(resolve));
  }

  markLocalFin(): void {
    this.localFin = true;
  }

  deliver(data: Buffer, fin: boolean): void {
    if (this.remoteFin || this.destroyed) return;
    if (data.length > 0 && !this.push(data)) this.session.block(this);
    if (fin) {
      this.remoteFin = true;
      this.push(null);
      this.settle();
    }
  }

  onReply(_headers: SpdyHeaders): void {
    this.replied = true;
    for (const w of this.replyWaiters.splice(0)) w();
  }

  onReset(status: number): void {
    this.resetStatus = status;
    this.wasReset = true;
    this.remoteFin = true;
    for (const w of this.replyWaiters.splice(0)) w();
    this.destroy();
  }

  override _read(): void {
    this.session.unblock(this);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.replied) {
      void this.whenReplied().then(() => this._write(chunk, _enc, cb));
      return;
    }
    if (this.localFin || this.wasReset || this.session.isClosed) {
      cb(new Error(`write on closed SPDY stream ${this.id}`));
      return;
    }
    const max = this.session.maxDataFrameBytes;
    let ok = true;
    for (let off = 0; off < chunk.length; off += max) {
      ok = this.session.write(encodeDataFrame(this.id, chunk.subarray(off, off + max), false));
    }
    if (ok) cb();
    else this.session.afterDrain(() => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    const finish = () => {
      if (!this.localFin && !this.wasReset) {
        this.localFin = true;
        this.session.write(encodeDataFrame(this.id, Buffer.alloc(0), true));
      }
      this.settle();
      cb();
    };
    if (this.replied) finish();
    else void this.whenReplied().then(finish);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.wasReset && !(this.localFin && this.remoteFin) && !this.session.isClosed) {
      this.wasReset = true;
      this.session.write(encodeRstStream(this.id, RstStatus.Cancel));
    }
    this.session.forget(this);
    cb(err);
  }

  /** Both directions done: the session no longer needs to route frames here. */
  private settle(): void {
    if (this.localFin && this.remoteFin) this.session.forget(this);
  }
}
