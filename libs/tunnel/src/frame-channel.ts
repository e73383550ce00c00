import { type EventEmitter, once } from 'node:events';
import type { Writable } from 'node:stream';
import { batchFrame, type Frame } from '@pullplane/proto';

/**
 * Where a multiplexer writes frames. Frames sent in one turn of the event loop leave in one
 * transport write. `send` returning false means the transport is backpressured: await
 * `drained()` before sending more.
 */
export interface FrameSink {
  send(frame: Frame): boolean;
  drained(): Promise<void>;
  /** Writes out frames still held for coalescing (call before ending the transport). */
  flush(): void;
  /** Runs `cb` once the frames sent after this call (and those pending) are written to the transport. */
  afterWrite?(cb: () => void): void;
  /**
   * Transport writes so far. A frame sent while this count is unchanged has not been encoded
   * yet, so its sender may still amend it (fold an end-of-stream flag or a first body chunk
   * into it, add to a window increment) instead of sending another frame.
   */
  readonly writes: number;
}

/** What a FrameSink writes to: one message per call. */
export interface FrameTransport {
  /** `done`, when given, runs once the message has been handed on (not if the transport fails). */
  write(message: Frame, done?: () => void): boolean;
  drained(): Promise<void>;
  /** Whether writes are now dropped (the transport ended or failed). */
  readonly closed: boolean;
  /** Whether the transport holds more than it wants: wait for drained() before sending more. */
  readonly needsDrain: boolean;
}

/** The parts of an object-mode writable of Frames (a grpc-js bidi call) that we use. */
export type FrameWritable = Pick<Writable, 'write' | 'destroyed' | 'writableEnded' | 'writableNeedDrain'> &
  EventEmitter;

/** A batch is flushed early past this many payload bytes, well under gRPC's 4 MiB message limit. */
const MAX_BATCH_BYTES = 1024 * 1024;

function payloadBytes(f: Frame): number {
  switch (f.kind.case) {
    case 'data':
      return f.kind.value.chunk.byteLength;
    case 'open':
    case 'responseHead':
      return 64 + f.kind.value.body.byteLength;
    default:
      return 16;
  }
}

/**
 * Coalesces the frames of one event-loop turn into one transport write: a single frame as it
 * is, several as a Batch. Each message costs framing, an encoding pass and an HTTP/2 DATA frame
 * on both ends, so a small request or response with its window update leaves as one.
 */
export class FrameBatcher implements FrameSink {
  private pending: Frame[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  private writeCount = 0;
  private written: Array<() => void> = [];
  private readonly flushNow = () => this.flush();

  constructor(private readonly transport: FrameTransport) {}

  get writes(): number {
    return this.writeCount;
  }

  afterWrite(cb: () => void): void {
    this.written.push(cb);
  }

  send(f: Frame): boolean {
    if (this.transport.closed) return true;
    this.pending.push(f);
    this.pendingBytes += payloadBytes(f);
    if (this.pendingBytes >= MAX_BATCH_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.flushNow);
    }
    return !this.transport.needsDrain;
  }

  flush(): void {
    this.scheduled = false;
    const frames = this.pending;
    if (frames.length === 0) return;
    this.pending = [];
    this.pendingBytes = 0;
    this.writeCount++;
    const written = this.written;
    if (written.length > 0) this.written = [];
    if (this.transport.closed) return;
    const message = frames.length === 1 ? frames[0]! : batchFrame(frames);
    if (written.length === 0) this.transport.write(message);
    else
      this.transport.write(message, () => {
        for (const cb of written) cb();
      });
  }

  drained(): Promise<void> {
    if (this.transport.closed || !this.transport.needsDrain) return Promise.resolve();
    return this.transport.drained();
  }
}

/**
 * Adapts an object-mode duplex of Frames (a grpc-js bidi call) into a FrameSink that writes
 * each turn's frames as one gRPC message.
 */
export function duplexFrameSink(duplex: FrameWritable): FrameSink {
  return new FrameBatcher({
    get closed() {
      return duplex.destroyed || duplex.writableEnded;
    },
    get needsDrain() {
      return duplex.writableNeedDrain;
    },
    write: (message, done) => (done ? duplex.write(message, () => done()) : duplex.write(message)),
    async drained() {
      if (duplex.destroyed || duplex.writableEnded || !duplex.writableNeedDrain) return;
      // Resolve on close as well: a dead transport never drains, and writers must not hang.
      const ac = new AbortController();
      await Promise.race([
        once(duplex, 'drain', { signal: ac.signal }).catch(() => undefined),
        once(duplex, 'close', { signal: ac.signal }).catch(() => undefined),
      ]);
      ac.abort();
    },
  });
}

/** Calls `fn` for each frame, unpacking batches. */
export function forEachFrame(f: Frame, fn: (f: Frame) => void): void {
  if (f.kind.case === 'batch') {
    for (const inner of f.kind.value.frames) if (inner.kind.case !== 'batch') fn(inner);
    return;
  }
  fn(f);
}
