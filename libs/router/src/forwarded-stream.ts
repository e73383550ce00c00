import { Duplex } from 'node:stream';
import { type ClientDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
import { dataFrame, endFrame, type Frame, frame, type Open, type ResponseHead } from '@pullplane/proto';
import { forEachFrame, TunnelError, TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';
import { agentNotConnected } from './errors.js';

/** Where to send one attempt of a forwarded stream. */
export interface ForwardTarget {
  address: string;
  sessionId: string;
  call(): ClientDuplexStream<Frame, Frame>;
}

export interface ForwardedStreamOptions {
  open: Open;
  target: ForwardTarget;
  /** Fresh target after `failed` turned out stale, or undefined when the agent is gone. */
  retarget: (failed: ForwardTarget) => Promise<ForwardTarget | undefined>;
  /** Until the gateway accepts, a stale route is retried; past this the request fails. */
  deadline: number;
  maxChunkSize: number;
}

/** Largest Data frame on the proxy -> gateway hop (well under gRPC's 4 MiB message limit). */
const HOP_CHUNK = 256 * 1024;

/**
 * The proxy side of one GatewayForward.Forward call, as a TunnelStream. The request body
 * is held back until the gateway reports that the agent's tunnel accepted the stream, so a
 * stale presence entry (gateway gone, agent moved) is retried against fresh presence with
 * nothing to replay.
 */
export class ForwardedStream extends Duplex implements TunnelStream {
  readonly open: Open;
  private call: ClientDuplexStream<Frame, Frame> | undefined;
  private target: ForwardTarget;
  private accepted = false;
  private acceptWaiters: Array<(err?: Error) => void> = [];
  private headResolve!: (h: ResponseHead) => void;
  private headReject!: (e: Error) => void;
  private readonly head: Promise<ResponseHead>;
  private remoteEnded = false;
  private localEnded = false;
  private acceptTimer: NodeJS.Timeout | undefined;
  private headSettled = false;

  constructor(private readonly opts: ForwardedStreamOptions) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: opts.maxChunkSize,
      writableHighWaterMark: opts.maxChunkSize,
    });
    this.open = opts.open;
    this.target = opts.target;
    this.head = new Promise((res, rej) => {
      this.headResolve = res;
      this.headReject = rej;
    });
    this.head.catch(() => undefined);
    // Failures are reported through responseHead(), pipeline() and `errored`; a remote
    // failure must never surface as an unhandled 'error' event.
    this.on('error', () => undefined);
    this.attempt();
  }

  get inputEnded(): boolean {
    return this.remoteEnded;
  }

  responseHead(): Promise<ResponseHead> {
    return this.head;
  }

  reset(code: TunnelErrorCode, message: string): void {
    this.destroy(new TunnelError(code, message));
  }

  private attempt(): void {
    const call = this.target.call();
    this.call = call;
    call.write(frame({ case: 'open', value: this.open }));
    if (!this.open.hasBody) this.localEnded = true;
    const remaining = this.opts.deadline - Date.now();
    this.acceptTimer = setTimeout(
      () => this.failBeforeAccept(call, `gateway ${this.target.address} did not accept the stream in time`),
      Math.max(remaining, 0),
    );
    call.on('data', (f: Frame) => forEachFrame(f, (inner) => this.onFrame(call, inner)));
    call.on('error', (err: ServiceError) => {
      if (call !== this.call) return;
      if (!this.accepted && (err.code === status.UNAVAILABLE || err.code === status.CANCELLED)) {
        this.failBeforeAccept(call, `gateway ${this.target.address} unreachable: ${err.details}`);
        return;
      }
      this.destroy(
        new TunnelError(
          err.code === status.UNAUTHENTICATED ? TunnelErrorCode.REFUSED : TunnelErrorCode.UNAVAILABLE,
          `gateway ${this.target.address}: ${err.details || err.message}`,
        ),
      );
    });
    call.on('end', () => {
      if (call === this.call && !this.remoteEnded && !this.destroyed) {
        this.destroy(
          new TunnelError(
            TunnelErrorCode.UNAVAILABLE,
            `gateway ${this.target.address} ended the stream early`,
          ),
        );
      }
    });
  }

  private failBeforeAccept(call: ClientDuplexStream<Frame, Frame>, reason: string): void {
    if (call !== this.call || this.accepted || this.destroyed) return;
    clearTimeout(this.acceptTimer);
    this.call = undefined;
    call.cancel();
    const failed = this.target;
    if (Date.now() >= this.opts.deadline) {
      this.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason));
      return;
    }
    this.opts.retarget(failed).then(
      (next) => {
        if (this.destroyed) return;
        if (!next) {
          this.destroy(agentNotConnected(this.open.agent));
          return;
        }
        this.target = next;
        this.attempt();
      },
      (err: unknown) =>
        this.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, `${reason}; ${String(err)}`)),
    );
  }

  private onFrame(call: ClientDuplexStream<Frame, Frame>, f: Frame): void {
    if (call !== this.call) return;
    const k = f.kind;
    switch (k.case) {
      case 'accepted': {
        this.accepted = true;
        clearTimeout(this.acceptTimer);
        const w = this.acceptWaiters;
        this.acceptWaiters = [];
        for (const wake of w) wake();
        return;
      }
      case 'responseHead': {
        // A v2 head may carry the start of the body, or all of it and the end.
        const { body, endStream } = k.value;
        this.headSettled = true;
        this.headResolve(
          body.byteLength > 0 || endStream
            ? { ...k.value, body: new Uint8Array(0), endStream: false }
            : k.value,
        );
        if (body.byteLength > 0) this.onFrame(call, dataFrame(1, body, endStream));
        else if (endStream) this.onFrame(call, endFrame(1));
        return;
      }
      case 'data':
        if (!this.push(Buffer.from(k.value.chunk.buffer, k.value.chunk.byteOffset, k.value.chunk.byteLength)))
          call.pause();
        if (k.value.endStream) this.onFrame(call, endFrame(1));
        return;
      case 'end':
        if (this.remoteEnded) return;
        this.remoteEnded = true;
        this.push(null);
        this.finishIfDone();
        return;
      case 'reset': {
        const err = TunnelError.fromReset(k.value.code, k.value.message);
        if (!this.accepted && err.code === TunnelErrorCode.NOT_FOUND) {
          this.failBeforeAccept(call, err.message);
          return;
        }
        this.remoteEnded = true;
        this.destroy(err);
        return;
      }
      default:
        this.destroy(new TunnelError(TunnelErrorCode.PROTOCOL, `unexpected ${k.case} frame from gateway`));
    }
  }

  private whenAccepted(): Promise<void> {
    if (this.accepted) return Promise.resolve();
    return new Promise((resolve, reject) =>
      this.acceptWaiters.push((err) => (err ? reject(err) : resolve())),
    );
  }

  override _read(): void {
    this.call?.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    void (async () => {
      await this.whenAccepted();
      for (let off = 0; off < chunk.length; off += HOP_CHUNK) {
        const call = this.call;
        if (!call || this.destroyed)
          throw new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed while writing');
        const ok = call.write(
          frame({ case: 'data', value: { streamId: 1, chunk: chunk.subarray(off, off + HOP_CHUNK) } }),
        );
        if (!ok) await new Promise<void>((r) => call.once('drain', () => r()));
      }
    })().then(() => cb(), cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.open.hasBody) {
      cb();
      return;
    }
    this.whenAccepted().then(() => {
      this.call?.write(frame({ case: 'end', value: { streamId: 1 } }));
      this.localEnded = true;
      this.finishIfDone();
      cb();
    }, cb);
  }

  private finishIfDone(): void {
    if (this.localEnded && this.remoteEnded) this.call?.end();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    clearTimeout(this.acceptTimer);
    // A clean finish creates no error object: this runs once per request.
    if (err || !this.headSettled || this.acceptWaiters.length > 0) {
      const failure =
        err ?? new TunnelError(TunnelErrorCode.CANCELLED, 'stream closed before a response arrived');
      this.headReject(failure);
      const w = this.acceptWaiters;
      this.acceptWaiters = [];
      for (const wake of w) wake(failure);
    }
    // Cancelling tells the gateway, which resets the agent's logical stream.
    if (this.call && !(this.localEnded && this.remoteEnded)) this.call.cancel();
    this.call = undefined;
    cb(err);
  }
}
