import { Duplex } from 'node:stream';
import {
  dataFrame,
  endFrame,
  type Frame,
  type Open,
  type ResponseHead,
  resetFrame,
  responseHeadFrame,
  windowUpdateFrame,
} from '@pullplane/proto';
import { DEFAULT_INITIAL_WINDOW, DEFAULT_MAX_CHUNK_SIZE, MAX_CHUNK_SIZE_LIMIT } from './defaults.js';
import { TunnelError, TunnelErrorCode } from './errors.js';
import type { AbortCause, StreamEntry } from './stream-entry.js';
import { WindowBudget } from './window-budget.js';

/**
 * What both kinds of request stream offer to the code that uses them (proxies, the agent):
 * a byte duplex for the bodies, the response head, and an explicit reset.
 */
export interface TunnelStream extends Duplex {
  /** The request head as opened. */
  readonly open: Open;
  /**
   * Resolves with the responder's status and headers; rejects if the stream fails first. A
   * body that came inline with the head is read from the stream like any other.
   */
  responseHead(): Promise<ResponseHead>;
  /** Aborts the stream in both directions and tells the peer why. */
  reset(code: TunnelErrorCode, message: string): void;
  /**
   * The peer's end has been handed to the readable side: once the buffered bytes are read,
   * nothing more comes. Lets a relay send those bytes and the end with the head in one message
   * instead of waiting for the 'data' and 'end' events of later ticks.
   */
  readonly inputEnded: boolean;
}

/** The multiplexer side of a logical stream: how the stream emits frames. */
export interface StreamHost {
  sendFrame(f: Frame): boolean;
  drained(): Promise<void>;
  release(stream: LogicalStream): void;
  /** The stream answered: its responder deadline no longer applies. */
  clearDeadline(stream: LogicalStream): void;
  /** The peer broke the protocol on this stream (which has been reset for it). */
  violation(
    stream: LogicalStream,
    kind: 'flow-control' | 'after-end' | 'unexpected-frame',
    message: string,
  ): void;
  readonly maxChunkSize: number;
  /** Transport writes so far: a frame sent while this is unchanged can still be amended. */
  readonly writes: number;
  /** The peer speaks v2: end-of-stream flags and inline bodies may be sent. */
  readonly foldFrames: boolean;
  readonly budget: WindowBudget;
  /** The largest window a bulk stream may grow to. */
  readonly maxWindow: number;
  /** The largest chunk a sender may use once the peer grew its window. */
  readonly maxChunkLimit: number;
}

export interface LogicalStreamOptions {
  initialWindow: number;
  /** Bytes the readable side may hold beyond the credit window before `_read` stops pulling. */
  highWaterMark: number;
  initiator: boolean;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A stream that fails before anyone asked for its head must not raise an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

const EMPTY = new Uint8Array(0);

/** Where a stream's frames go while it is on no multiplexer (see `detach`): nowhere. */
const DETACHED: StreamHost = {
  sendFrame: () => true,
  drained: () => Promise.resolve(),
  release: () => undefined,
  clearDeadline: () => undefined,
  violation: () => undefined,
  maxChunkSize: DEFAULT_MAX_CHUNK_SIZE,
  writes: Number.NaN,
  foldFrames: false,
  budget: new WindowBudget(Number.POSITIVE_INFINITY),
  maxWindow: DEFAULT_INITIAL_WINDOW,
  maxChunkLimit: MAX_CHUNK_SIZE_LIMIT,
};

/**
 * One logical stream inside a tunnel. Flow control is credit based and per stream: the
 * peer may send at most the stream's window of bytes we have not yet handed to our reader, so
 * a reader that stops reading stalls only its own stream, and memory per stream is bounded by
 * the window plus the readable high-water mark.
 *
 * Towards a v2 peer, frames not yet written are amended rather than followed: the first body
 * chunk rides inline in the Open or ResponseHead, the end of stream becomes a flag on the last
 * frame, and window increments of one turn add up in one WindowUpdate. A small request or
 * response is then a single frame.
 */
export class LogicalStream extends Duplex implements TunnelStream, StreamEntry {
  private sendWindow: number;
  /** The largest send window seen: the peer grows it for bulk streams, and chunks grow with it. */
  private peakSendWindow: number;
  private windowWaiters: Array<(err?: Error) => void> = [];
  private readonly recvQueue: Buffer[] = [];
  private recvWindow: number;
  private receivedTotal = 0;
  private creditedTotal = 0;
  private pendingCredit = 0;
  /** Bytes handed to the reader since the window last grew. */
  private deliveredSinceGrowth = 0;
  private wantRead = false;
  private remoteEnded = false;
  private remoteEndPushed = false;
  private localEnded = false;
  private resetSeen = false;
  private responded = false;
  private headSettled = false;
  private readonly head = deferred<ResponseHead>();
  /** The last frame carrying our side's data (Open, ResponseHead, Data), while amendable. */
  private tail: Frame | undefined;
  private tailWrites = -1;
  private lastWindowUpdate: Frame | undefined;
  private lastWindowUpdateWrites = -1;
  /** Responder deadline (ms since epoch), managed by the multiplexer; 0 = none. */
  deadlineAt = 0;
  /** The peer sent something for this stream: its Open can no longer be sent elsewhere. */
  private heard = false;
  /**
   * Writes (and the end) held back while the stream is on no multiplexer, and, once attached,
   * while its body follows the Open and the peer has not accepted it yet. Only what fits inline
   * in an Open not yet written passes; nothing is sent that sending the Open elsewhere would
   * have to replay.
   */
  private held: Array<(err?: Error) => void> | undefined;
  private host: StreamHost;

  /**
   * Without `host`, the stream starts on no multiplexer (an initiator whose Open and body wait
   * until `Multiplexer.attach` sends them).
   */
  constructor(
    host: StreamHost | undefined,
    public id: number,
    readonly open: Open,
    private readonly opts: LogicalStreamOptions,
  ) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: opts.highWaterMark,
      writableHighWaterMark: opts.highWaterMark,
    });
    this.sendWindow = opts.initialWindow;
    this.peakSendWindow = opts.initialWindow;
    this.recvWindow = opts.initialWindow;
    // Only the initiator waits for a response head.
    this.headSettled = !opts.initiator;
    // A response is taken into the readable buffer (up to its high-water mark) before anyone
    // reads, as an HTTP response is: a requester that pauses before reading sees it there.
    this.wantRead = opts.initiator;
    // A peer's reset must never crash the process through an unhandled 'error' event; the
    // failure stays visible through responseHead(), pipeline() and `errored`.
    this.on('error', () => undefined);
    this.host = host ?? DETACHED;
    if (!host) this.held = [];
  }

  responseHead(): Promise<ResponseHead> {
    return this.head.promise;
  }

  /** Responder only: sends the status and headers. Body follows through write()/end(). */
  respond(status: number, headers: ReadonlyArray<{ name: string; value: string }> = []): void {
    if (this.opts.initiator) throw new Error('only the responder sends a response head');
    if (this.responded || this.destroyed) return;
    this.responded = true;
    this.host.clearDeadline(this);
    this.sendTail(responseHeadFrame(this.id, status, headers));
  }

  get inputEnded(): boolean {
    return this.remoteEndPushed;
  }

  get hasResponded(): boolean {
    return this.responded;
  }

  /**
   * Whether `bytes` more (within the stream's credit) may be held for its reader. The credit
   * window bounds each stream; a subclass bounding many streams together says no, after
   * resetting the stream, when they would hold too much.
   */
  protected admit(_bytes: number): boolean {
    return true;
  }

  /** Anything came back from the peer (an answer, credit, a reset). */
  get heardBack(): boolean {
    return this.heard;
  }

  /** Initiator that has heard nothing back yet: its Open can still be sent elsewhere. */
  get unanswered(): boolean {
    return this.opts.initiator && !this.heard && !this.destroyed;
  }

  reset(code: TunnelErrorCode, message: string): void {
    if (this.destroyed) return;
    const err = new TunnelError(code, message);
    this.sendReset(err);
    this.destroy(err);
  }

  // ---- called by the multiplexer ----

  /** A frame of this stream from the peer (StreamEntry). */
  receive(f: Frame): void {
    const k = f.kind;
    switch (k.case) {
      case 'responseHead':
        this.onResponseHead(k.value);
        return;
      case 'data':
        this.onData(k.value.chunk, k.value.endStream);
        return;
      case 'end':
        this.onRemoteEnd();
        return;
      case 'windowUpdate':
        this.onWindowUpdate(k.value.increment);
        return;
      case 'reset':
        this.onReset(TunnelError.fromReset(k.value.code, k.value.message));
        return;
      case 'accepted':
        this.onAccepted();
        return;
      case 'open':
        // The peer opened an id that is in use: its Reset ends this stream on both sides.
        if (!this.destroyed) this.breach('unexpected-frame', `the peer opened stream ${this.id} again`);
        return;
    }
  }

  /** The stream cannot go on (StreamEntry). */
  abort(err: TunnelError, cause: AbortCause): void {
    if (cause === 'violation') this.reset(err.code, err.message);
    else if (cause === 'oversize') this.onReset(err);
    else this.onTransportClosed(err);
  }

  /**
   * Initiator: the multiplexer sent the Open (`writesBefore` is the write count before it), with
   * `inline` bytes of body in it that count against our credit.
   */
  openSent(open: Frame, writesBefore: number, inline: number): void {
    this.sendWindow -= inline;
    this.tail = open;
    this.tailWrites = writesBefore;
  }

  /**
   * Leaves its multiplexer with nothing sent but the Open (while `unanswered`), which `attach`
   * sends again, on another multiplexer. Writes wait meanwhile.
   */
  detach(): void {
    this.host.release(this);
    this.host = DETACHED;
    this.tail = undefined;
    this.held ??= [];
  }

  /**
   * Joins a multiplexer as stream `id` with its window. Returns the Open to send (the same
   * request head and inline body); call `openSent` once it is sent, then `resumeHeld`.
   */
  attach(host: StreamHost, id: number, initialWindow: number): Frame {
    this.host = host;
    this.id = id;
    this.open.streamId = id;
    this.sendWindow = initialWindow;
    this.peakSendWindow = initialWindow;
    this.recvWindow = initialWindow;
    this.opts.initialWindow = initialWindow;
    return { $typeName: 'pullplane.tunnel.v1.Frame', kind: { case: 'open', value: this.open } };
  }

  /**
   * After `attach` sent the Open: held writes go inline into it while it is not written yet; a
   * body that follows the Open waits for `onAccepted`.
   */
  resumeHeld(): void {
    const held = this.held ?? [];
    this.held = this.open.hasBody ? [] : undefined;
    for (const next of held) next();
  }

  /** The peer took the stream: the rest of the body may follow. */
  private onAccepted(): void {
    this.heard = true;
    const held = this.held;
    this.held = undefined;
    for (const next of held ?? []) next();
  }

  /** Responder: takes the request's inline body and end of stream, once registered. */
  acceptOpen(): void {
    if (this.open.body.byteLength > 0) this.onData(this.open.body);
    if (!this.open.hasBody) this.onRemoteEnd();
  }

  private onResponseHead(head: ResponseHead): void {
    this.heard = true;
    if (this.headSettled) {
      if (!this.destroyed) this.breach('unexpected-frame', 'the peer sent a second response head');
      return;
    }
    this.headSettled = true;
    const { body, endStream } = head;
    // The head is handed on (a gateway forwards it) without what the stream itself delivers.
    this.head.resolve(body.byteLength > 0 || endStream ? { ...head, body: EMPTY, endStream: false } : head);
    if (body.byteLength > 0) this.onData(body);
    if (endStream) this.onRemoteEnd();
  }

  private onData(chunk: Uint8Array, endStream = false): void {
    this.heard = true;
    if (this.destroyed) return;
    if (this.remoteEnded) {
      this.breach('after-end', 'the peer sent data after the end of the stream');
      return;
    }
    const allowance = this.recvWindow - (this.receivedTotal - this.creditedTotal);
    if (chunk.byteLength > allowance) {
      this.breach(
        'flow-control',
        `peer sent ${chunk.byteLength} bytes with only ${allowance} bytes of credit`,
      );
      return;
    }
    if (chunk.byteLength > 0 && !this.admit(chunk.byteLength)) return;
    if (chunk.byteLength > 0) {
      this.receivedTotal += chunk.byteLength;
      this.host.budget.track(chunk.byteLength);
      this.recvQueue.push(
        Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
      );
    }
    if (endStream) this.onRemoteEnd();
    else this.pump();
  }

  private onRemoteEnd(): void {
    this.heard = true;
    if (this.destroyed) return;
    if (this.remoteEnded) {
      this.breach('after-end', 'the peer ended the stream twice');
      return;
    }
    this.remoteEnded = true;
    this.pump();
    this.releaseIfComplete();
  }

  /**
   * Both directions have ended: the multiplexer forgets the stream now rather than when the
   * Duplex is destroyed, which waits for a reader that a bodiless request may never have.
   */
  private releaseIfComplete(): void {
    if (this.localEnded && this.remoteEnded) this.host.release(this);
  }

  /** Resets the stream for the peer's breach of the protocol and reports it. */
  private breach(kind: 'flow-control' | 'after-end' | 'unexpected-frame', message: string): void {
    this.reset(kind === 'flow-control' ? TunnelErrorCode.FLOW_CONTROL : TunnelErrorCode.PROTOCOL, message);
    this.host.violation(this, kind, message);
  }

  private onWindowUpdate(increment: number): void {
    this.heard = true;
    this.sendWindow += increment;
    if (this.sendWindow > this.peakSendWindow) this.peakSendWindow = this.sendWindow;
    const waiters = this.windowWaiters;
    this.windowWaiters = [];
    for (const wake of waiters) wake();
  }

  private onReset(err: TunnelError): void {
    this.heard = true;
    this.resetSeen = true;
    this.destroy(err);
  }

  /** The tunnel carrying this stream is gone. */
  private onTransportClosed(err: TunnelError): void {
    this.resetSeen = true;
    this.destroy(err);
  }

  // ---- Duplex implementation ----

  override _read(): void {
    this.wantRead = true;
    this.pump();
  }

  private pump(): void {
    while (this.wantRead && this.recvQueue.length > 0) {
      const chunk = this.recvQueue.shift()!;
      this.pendingCredit += chunk.length;
      this.deliveredSinceGrowth += chunk.length;
      this.wantRead = this.push(chunk);
    }
    if (this.remoteEnded && this.recvQueue.length === 0 && !this.remoteEndPushed) {
      this.remoteEndPushed = true;
      this.push(null);
    }
    // Credit goes back in steps of a quarter window, never byte by byte: tiny credits make the
    // sender emit tiny frames (silly window syndrome). This cannot deadlock: a sender blocked on
    // an empty window has a full window outstanding, and it all becomes credit as it is read.
    // A stream whose peer has ended needs no more credit.
    if (this.pendingCredit > 0 && !this.remoteEnded && this.pendingCredit >= this.recvWindow / 4) {
      const credit = this.pendingCredit;
      this.pendingCredit = 0;
      this.creditedTotal += credit;
      this.host.budget.track(-credit);
      this.sendCredit(credit + this.growWindow());
    }
  }

  /**
   * A stream whose reader keeps up (nothing queued, more wanted) and that has moved a whole
   * window since the window last grew is moving bulk data: double its window, up to the
   * maximum, if the session's budget allows. Slow readers and idle streams never grow.
   */
  private growWindow(): number {
    if (this.recvQueue.length > 0 || !this.wantRead || this.deliveredSinceGrowth < this.recvWindow) return 0;
    const grow = Math.min(this.recvWindow, this.host.maxWindow - this.recvWindow);
    if (grow <= 0 || !this.host.budget.tryReserve(grow)) return 0;
    this.recvWindow += grow;
    this.deliveredSinceGrowth = 0;
    return grow;
  }

  /** One WindowUpdate per stream per turn: later credit of the same turn is added to it. */
  private sendCredit(increment: number): void {
    const pending = this.lastWindowUpdate;
    if (pending?.kind.case === 'windowUpdate' && this.host.writes === this.lastWindowUpdateWrites) {
      pending.kind.value.increment += increment;
      return;
    }
    const writesBefore = this.host.writes;
    const f = windowUpdateFrame(this.id, increment);
    this.host.sendFrame(f);
    this.lastWindowUpdate = f;
    this.lastWindowUpdateWrites = writesBefore;
  }

  /** The largest chunk to send now: the negotiated size, more once the peer grew our window. */
  private chunkLimit(): number {
    const grown = Math.floor(this.peakSendWindow / 4);
    return grown > this.host.maxChunkSize ? Math.min(grown, this.host.maxChunkLimit) : this.host.maxChunkSize;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.sendFrom(chunk, 0, cb);
  }

  /** Sends `buf` from `offset` as credit allows; synchronous while credit lasts. */
  private sendFrom(buf: Buffer, offset: number, cb: (err?: Error | null) => void): void {
    while (offset < buf.length) {
      if (this.destroyed) {
        cb(new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed while writing'));
        return;
      }
      if (this.held && this.amendableOpen()?.body.byteLength !== 0) {
        this.held.push((err) => (err ? cb(err) : this.sendFrom(buf, offset, cb)));
        return;
      }
      if (this.sendWindow <= 0) {
        this.windowWaiters.push((err) => (err ? cb(err) : this.sendFrom(buf, offset, cb)));
        return;
      }
      const n = Math.min(buf.length - offset, this.sendWindow, this.chunkLimit());
      const ok = this.sendBody(buf.subarray(offset, offset + n));
      this.sendWindow -= n;
      offset += n;
      if (!ok) {
        this.host.drained().then(() => this.sendFrom(buf, offset, cb), cb);
        return;
      }
    }
    cb();
  }

  private amendable(): Frame | undefined {
    return this.host.foldFrames && this.host.writes === this.tailWrites ? this.tail : undefined;
  }

  private amendableOpen(): Open | undefined {
    const k = this.amendable()?.kind;
    return k?.case === 'open' ? k.value : undefined;
  }

  /** Puts a body chunk inline in a head not yet written, or sends it as Data. */
  private sendBody(chunk: Buffer): boolean {
    const tail = this.amendable();
    const k = tail?.kind;
    if ((k?.case === 'open' || k?.case === 'responseHead') && k.value.body.byteLength === 0) {
      k.value.body = chunk;
      return true;
    }
    return this.sendTail(dataFrame(this.id, chunk));
  }

  private sendTail(f: Frame): boolean {
    const writesBefore = this.host.writes;
    const ok = this.host.sendFrame(f);
    this.tail = f;
    this.tailWrites = writesBefore;
    return ok;
  }

  override _final(cb: (err?: Error | null) => void): void {
    // A bodiless request was announced in Open; the responder needs no End for it.
    const announcedNoBody = this.opts.initiator && !this.open.hasBody;
    if (!announcedNoBody && this.held && !this.amendableOpen()) {
      this.held.push((err) => (err ? cb(err) : this._final(cb)));
      return;
    }
    this.localEnded = true;
    if (!announcedNoBody) this.sendEnd();
    this.tail = undefined;
    this.releaseIfComplete();
    cb();
  }

  /** Ends our side: as a flag on our last frame if it is not written yet, else as End. */
  private sendEnd(): void {
    const k = this.amendable()?.kind;
    if (k?.case === 'open') k.value.hasBody = false;
    else if (k?.case === 'responseHead' || k?.case === 'data') k.value.endStream = true;
    else this.host.sendFrame(endFrame(this.id));
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    const clean = this.localEnded && this.remoteEnded && !err;
    if (!clean && !this.resetSeen) {
      this.sendReset(
        err instanceof TunnelError
          ? err
          : new TunnelError(
              err ? TunnelErrorCode.INTERNAL : TunnelErrorCode.CANCELLED,
              err?.message ?? 'stream cancelled',
            ),
      );
    }
    if (err || !this.headSettled || this.windowWaiters.length > 0 || (this.held?.length ?? 0) > 0) {
      const failure =
        err ?? new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed before a response arrived');
      this.head.reject(failure);
      const waiters = this.windowWaiters;
      this.windowWaiters = [];
      for (const wake of waiters) wake(failure);
    }
    const held = this.held;
    this.held = undefined;
    for (const wake of held ?? []) wake(err ?? new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed'));
    // What the peer sent and nobody will read no longer counts against the session.
    this.host.budget.track(-(this.receivedTotal - this.creditedTotal));
    this.creditedTotal = this.receivedTotal;
    this.recvQueue.length = 0;
    const grown = this.recvWindow - this.opts.initialWindow;
    if (grown > 0) this.host.budget.release(grown);
    this.recvWindow = this.opts.initialWindow;
    this.host.release(this);
    cb(err);
  }

  private sendReset(err: TunnelError): void {
    if (this.resetSeen) return;
    this.resetSeen = true;
    this.tail = undefined;
    this.host.sendFrame(resetFrame(this.id, err.resetCode, err.message));
  }
}
