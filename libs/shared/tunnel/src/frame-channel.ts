import type { EventEmitter } from 'node:events';
import type { Writable } from 'node:stream';
import {
  BATCH_ENTRY_OVERHEAD,
  batchFrame,
  type Frame,
  frameSizeBound,
  MAX_TUNNEL_MESSAGE_BYTES,
  ResetCode,
  resetFrame,
  streamIdOf,
} from '@pullplane/proto';

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
  /** Set by the sink's owner: a frame too large for any message was replaced by a Reset. */
  onOversize?: ((f: Frame, bytes: number) => void) | undefined;
}

/** What a FrameSink writes to: one message per call. */
export interface FrameTransport {
  /**
   * `done`, when given, runs once the message has been handed on, or once the transport failed
   * with it still queued (then `closed` is true).
   */
  write(message: Frame, done?: () => void): boolean;
  drained(): Promise<void>;
  /** Whether writes are now dropped (the transport ended or failed). */
  readonly closed: boolean;
  /** Whether the transport holds more than it wants: wait for drained() before sending more. */
  readonly needsDrain: boolean;
  /** Runs `cb` once when the transport closes (ended, failed or destroyed). */
  onClose?(cb: () => void): void;
}

/** A batch is flushed early past this many payload bytes: one message need not wait for a whole turn. */
const EARLY_FLUSH_BYTES = 1024 * 1024;

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

export interface FrameBatcherOptions {
  /** The largest message the peer accepts (its gRPC receive limit). */
  maxMessageBytes?: number;
}

/**
 * Coalesces the frames of one event-loop turn into one transport write: a single frame as it
 * is, several as a Batch. Each message costs framing, an encoding pass and an HTTP/2 DATA frame
 * on both ends, so a small request or response with its window update leaves as one. Every
 * message is measured and split to fit the peer's receive limit: a message over it would fail
 * the whole transport, and with it every stream on it.
 */
export class FrameBatcher implements FrameSink {
  private pending: Frame[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  private writeCount = 0;
  private written: Array<() => void> = [];
  /** Callbacks of messages handed to the transport and not yet written. */
  private readonly inFlight = new Set<Array<() => void>>();
  private readonly maxMessageBytes: number;
  private readonly flushNow = () => this.flush();
  /**
   * A frame that cannot fit in any message the peer accepts is not sent: a Reset of its stream
   * goes in its place, and this tells the owner so the stream fails here too.
   */
  onOversize: ((f: Frame, bytes: number) => void) | undefined;

  constructor(
    private readonly transport: FrameTransport,
    opts: FrameBatcherOptions = {},
  ) {
    this.maxMessageBytes = opts.maxMessageBytes ?? MAX_TUNNEL_MESSAGE_BYTES;
    // Bytes counted until written must be given back when the transport dies holding them.
    transport.onClose?.(() => {
      for (const cbs of [...this.inFlight]) this.settle(cbs);
    });
  }

  get writes(): number {
    return this.writeCount;
  }

  afterWrite(cb: () => void): void {
    this.written.push(cb);
  }

  send(f: Frame): boolean {
    if (this.transport.closed) {
      // Dropped: what was counted until written is written as far as anyone will ever know.
      if (this.written.length > 0) this.flush();
      return true;
    }
    this.pending.push(f);
    this.pendingBytes += payloadBytes(f);
    if (this.pendingBytes >= EARLY_FLUSH_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      // Not a microtask: those run after each I/O callback, and the frames of several sockets
      // read in one poll would each leave in a message of their own.
      setImmediate(this.flushNow);
    }
    return !this.transport.needsDrain;
  }

  flush(): void {
    this.scheduled = false;
    const frames = this.pending;
    const written = this.written;
    if (frames.length === 0 && written.length === 0) return;
    this.pending = [];
    this.pendingBytes = 0;
    if (written.length > 0) this.written = [];
    if (frames.length === 0 || this.transport.closed) {
      for (const cb of written) cb();
      return;
    }
    this.writeCount++;
    if (frames.length === 1) {
      const only = this.fitting(frames[0]!, this.maxMessageBytes);
      this.write(only, written);
      return;
    }
    // Frames are measured as they are now: a sender may have amended one (an inline body, an
    // end flag) since it was queued.
    const room = this.maxMessageBytes - BATCH_ENTRY_OVERHEAD;
    let group: Frame[] = [];
    let groupBytes = 0;
    for (const f of frames) {
      const fitted = this.fitting(f, room - BATCH_ENTRY_OVERHEAD);
      const bytes = frameSizeBound(fitted) + BATCH_ENTRY_OVERHEAD;
      if (group.length > 0 && groupBytes + bytes > room) {
        this.write(group.length === 1 ? group[0]! : batchFrame(group), []);
        group = [];
        groupBytes = 0;
      }
      group.push(fitted);
      groupBytes += bytes;
    }
    this.write(group.length === 1 ? group[0]! : batchFrame(group), written);
  }

  drained(): Promise<void> {
    if (this.transport.closed || !this.transport.needsDrain) return Promise.resolve();
    return this.transport.drained();
  }

  /** `f`, or a Reset of its stream in its place when `f` alone exceeds `room`. */
  private fitting(f: Frame, room: number): Frame {
    const bytes = frameSizeBound(f);
    if (bytes <= room) return f;
    const id = streamIdOf(f);
    this.onOversize?.(f, bytes);
    return resetFrame(
      id ?? 0,
      ResetCode.INTERNAL,
      `a ${f.kind.case ?? 'empty'} frame of ${bytes} bytes exceeds the tunnel's message limit`,
    );
  }

  private write(message: Frame, cbs: Array<() => void>): void {
    if (cbs.length === 0) {
      this.transport.write(message);
      return;
    }
    this.inFlight.add(cbs);
    this.transport.write(message, () => this.settle(cbs));
  }

  private settle(cbs: Array<() => void>): void {
    if (!this.inFlight.delete(cbs)) return;
    for (const cb of cbs) cb();
  }
}

/**
 * Bytes a tunnel's HTTP/2 stream may hold unwritten before its writers wait. Node's default
 * (16 KiB) made a turn's few small replies (eight 4 KiB Redis values) wait a turn for the
 * previous message to leave; a bulk message (up to EARLY_FLUSH_BYTES) still holds writers back
 * until it is written.
 */
export const TRANSPORT_HIGH_WATER = 256 * 1024;

/**
 * The FrameTransport of a Node writable (an HTTP/2 stream of a gRPC call) onto which `write`
 * puts one message: closed once ended or destroyed, backpressured while it holds
 * `highWater` bytes or more not yet written (until it has written them all: its `drain`).
 */
export function writableFrameTransport(
  stream: Pick<Writable, 'destroyed' | 'writableEnded' | 'writableNeedDrain' | 'writableLength'> &
    EventEmitter,
  write: FrameTransport['write'],
  highWater = TRANSPORT_HIGH_WATER,
): FrameTransport {
  // Past its own high-water mark (never above ours) the writable owes a 'drain'.
  const needsDrain = () => stream.writableNeedDrain && stream.writableLength >= highWater;
  // Every writer held back waits on one promise: a listener pair per waiter would pile up on
  // the stream (one per logical stream of the tunnel).
  let draining: Promise<void> | undefined;
  return {
    get closed() {
      return stream.destroyed || stream.writableEnded;
    },
    get needsDrain() {
      return needsDrain();
    },
    write,
    onClose: (cb) => {
      if (stream.destroyed) queueMicrotask(cb);
      else stream.once('close', cb);
    },
    drained() {
      if (stream.destroyed || stream.writableEnded || !needsDrain()) return Promise.resolve();
      // Plain listeners, removed by whichever fires: `events.once` with an AbortSignal costs an
      // AbortController and an AbortError (with its stack) per wait, on a path every busy
      // tunnel takes many times a second.
      draining ??= new Promise<void>((resolve) => {
        const done = () => {
          stream.off('drain', done);
          stream.off('close', done);
          draining = undefined;
          resolve();
        };
        // Resolve on close as well: a dead transport never drains, and writers must not hang.
        stream.on('drain', done);
        stream.on('close', done);
      });
      return draining;
    },
  };
}

/** Calls `fn` for each frame, unpacking batches. */
export function forEachFrame(f: Frame, fn: (f: Frame) => void): void {
  if (f.kind.case === 'batch') {
    for (const inner of f.kind.value.frames) if (inner.kind.case !== 'batch') fn(inner);
    return;
  }
  fn(f);
}
