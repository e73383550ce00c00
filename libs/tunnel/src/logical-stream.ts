import { Duplex } from 'node:stream';
import type { Header, Open, ResponseHead } from '@pullplane/proto';
import { frame } from '@pullplane/proto';
import { TunnelError, TunnelErrorCode } from './errors.js';

/**
 * What both kinds of request stream offer to the code that uses them (proxies, the agent):
 * a byte duplex for the bodies, the response head, and an explicit reset.
 */
export interface TunnelStream extends Duplex {
  /** The request head as opened. */
  readonly open: Open;
  /** Resolves with the responder's status and headers; rejects if the stream fails first. */
  responseHead(): Promise<ResponseHead>;
  /** Aborts the stream in both directions and tells the peer why. */
  reset(code: TunnelErrorCode, message: string): void;
}

/** The multiplexer side of a logical stream: how the stream emits frames. */
export interface StreamHost {
  sendFrame(f: ReturnType<typeof frame>): boolean;
  drained(): Promise<void>;
  release(stream: LogicalStream): void;
  readonly maxChunkSize: number;
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

/**
 * One logical stream inside a tunnel. Flow control is credit based and per stream: the
 * peer may send at most `initialWindow` bytes we have not yet handed to our reader, so a
 * reader that stops reading stalls only its own stream, and memory per stream is bounded
 * by the window plus the readable high-water mark.
 */
export class LogicalStream extends Duplex implements TunnelStream {
  private sendWindow: number;
  private windowWaiters: Array<(err?: Error) => void> = [];
  private readonly recvQueue: Buffer[] = [];
  private receivedTotal = 0;
  private creditedTotal = 0;
  private pendingCredit = 0;
  private wantRead = false;
  private remoteEnded = false;
  private remoteEndPushed = false;
  private localEnded = false;
  private resetSeen = false;
  private responded = false;
  private headSettled = false;
  private readonly head = deferred<ResponseHead>();

  constructor(
    private readonly host: StreamHost,
    readonly id: number,
    readonly open: Open,
    private readonly opts: LogicalStreamOptions,
  ) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: opts.highWaterMark,
      writableHighWaterMark: opts.highWaterMark,
    });
    this.sendWindow = opts.initialWindow;
    // Only the initiator waits for a response head.
    this.headSettled = !opts.initiator;
    // A peer's reset must never crash the process through an unhandled 'error' event; the
    // failure stays visible through responseHead(), pipeline() and `errored`.
    this.on('error', () => undefined);
    // The responder sees a bodiless request as already ended.
    if (!opts.initiator && !open.hasBody) this.onRemoteEnd();
  }

  responseHead(): Promise<ResponseHead> {
    return this.head.promise;
  }

  /** Responder only: sends the status and headers. Body follows through write()/end(). */
  respond(status: number, headers: Array<{ name: string; value: string }> = []): void {
    if (this.opts.initiator) throw new Error('only the responder sends a response head');
    if (this.responded || this.destroyed) return;
    this.responded = true;
    this.host.sendFrame(
      frame({
        case: 'responseHead',
        value: { streamId: this.id, status, headers: headers as Header[] },
      }),
    );
  }

  get hasResponded(): boolean {
    return this.responded;
  }

  reset(code: TunnelErrorCode, message: string): void {
    if (this.destroyed) return;
    const err = new TunnelError(code, message);
    this.sendReset(err);
    this.destroy(err);
  }

  // ---- called by the multiplexer ----

  onResponseHead(head: ResponseHead): void {
    this.headSettled = true;
    this.head.resolve(head);
  }

  onData(chunk: Uint8Array): void {
    if (this.remoteEnded || this.destroyed) return;
    const allowance = this.opts.initialWindow - (this.receivedTotal - this.creditedTotal);
    if (chunk.byteLength > allowance) {
      this.reset(
        TunnelErrorCode.FLOW_CONTROL,
        `peer sent ${chunk.byteLength} bytes with only ${allowance} bytes of credit`,
      );
      return;
    }
    this.receivedTotal += chunk.byteLength;
    this.recvQueue.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.pump();
  }

  onRemoteEnd(): void {
    if (this.remoteEnded) return;
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

  onWindowUpdate(increment: number): void {
    this.sendWindow += increment;
    const waiters = this.windowWaiters;
    this.windowWaiters = [];
    for (const wake of waiters) wake();
  }

  onReset(err: TunnelError): void {
    this.resetSeen = true;
    this.destroy(err);
  }

  /** The tunnel carrying this stream is gone. */
  onTransportClosed(err: TunnelError): void {
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
      this.wantRead = this.push(chunk);
    }
    if (this.remoteEnded && this.recvQueue.length === 0 && !this.remoteEndPushed) {
      this.remoteEndPushed = true;
      this.push(null);
    }
    // Credit goes back in steps of a quarter window, never byte by byte: tiny credits make the
    // sender emit tiny frames (silly window syndrome). This cannot deadlock: a sender blocked on
    // an empty window has a full window outstanding, and it all becomes credit as it is read.
    if (this.pendingCredit > 0 && !this.remoteEnded && this.pendingCredit >= this.opts.initialWindow / 4) {
      const increment = this.pendingCredit;
      this.pendingCredit = 0;
      this.creditedTotal += increment;
      this.host.sendFrame(frame({ case: 'windowUpdate', value: { streamId: this.id, increment } }));
    }
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.sendChunked(chunk).then(() => cb(), cb);
  }

  private async sendChunked(buf: Buffer): Promise<void> {
    let offset = 0;
    while (offset < buf.length) {
      if (this.destroyed) throw new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed while writing');
      if (this.sendWindow <= 0) {
        await new Promise<void>((resolve, reject) =>
          this.windowWaiters.push((err) => (err ? reject(err) : resolve())),
        );
        continue;
      }
      const n = Math.min(buf.length - offset, this.sendWindow, this.host.maxChunkSize);
      const ok = this.host.sendFrame(
        frame({ case: 'data', value: { streamId: this.id, chunk: buf.subarray(offset, offset + n) } }),
      );
      this.sendWindow -= n;
      offset += n;
      if (!ok) await this.host.drained();
    }
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.localEnded = true;
    // A bodiless request was announced in Open; the responder needs no End for it.
    const announcedNoBody = this.opts.initiator && !this.open.hasBody;
    if (!announcedNoBody) this.host.sendFrame(frame({ case: 'end', value: { streamId: this.id } }));
    this.releaseIfComplete();
    cb();
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
    if (err || !this.headSettled || this.windowWaiters.length > 0) {
      const failure =
        err ?? new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed before a response arrived');
      this.head.reject(failure);
      const waiters = this.windowWaiters;
      this.windowWaiters = [];
      for (const wake of waiters) wake(failure);
    }
    this.recvQueue.length = 0;
    this.host.release(this);
    cb(err);
  }

  private sendReset(err: TunnelError): void {
    if (this.resetSeen) return;
    this.resetSeen = true;
    this.host.sendFrame(
      frame({ case: 'reset', value: { streamId: this.id, code: err.resetCode, message: err.message } }),
    );
  }
}
