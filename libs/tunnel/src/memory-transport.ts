import { decodeFrame, encodeFrame, type Frame } from '@pullplane/proto';
import { FrameBatcher, type FrameSink } from './frame-channel.js';

export interface MemoryLink {
  /** Sink for side A; frames arrive at B's receiver. */
  a: FrameSink;
  /** Sink for side B; frames arrive at A's receiver. */
  b: FrameSink;
  connect(receiveA: (f: Frame) => void, receiveB: (f: Frame) => void): void;
  /** Messages queued but not yet delivered, per direction. */
  queued(): { toA: number; toB: number };
  /** Transport writes (messages, each one turn's frames) so far, per direction. */
  written(): { toA: number; toB: number };
  close(): void;
}

/**
 * An in-process frame link with asynchronous delivery and transport backpressure, for tests
 * and benchmarks. Each side sends through the same per-turn batching as a gRPC tunnel, and each
 * message goes through the wire encoding (the fast codec) unless `encode` is false.
 */
export function createMemoryLink(opts: { highWaterFrames?: number; encode?: boolean } = {}): MemoryLink {
  const hwm = opts.highWaterFrames ?? 64;
  const encode = opts.encode ?? true;
  let closed = false;
  const mk = () => {
    const queue: Array<Frame | Buffer> = [];
    let deliver: ((f: Frame) => void) | undefined;
    let waiters: Array<() => void> = [];
    let scheduled = false;
    let writes = 0;
    const release = () => {
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    };
    const flush = () => {
      scheduled = false;
      while (queue.length > 0 && deliver && !closed) {
        const m = queue.shift()!;
        deliver(Buffer.isBuffer(m) ? decodeFrame(m) : m);
      }
      release();
    };
    const sink = new FrameBatcher({
      get closed() {
        return closed;
      },
      get needsDrain() {
        return queue.length >= hwm;
      },
      write(message) {
        writes++;
        queue.push(encode ? encodeFrame(message) : message);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
        return queue.length < hwm;
      },
      drained() {
        if (queue.length < hwm || closed) return Promise.resolve();
        return new Promise((resolve) => waiters.push(resolve));
      },
    });
    return {
      sink,
      queue,
      writes: () => writes,
      setDeliver: (d: (f: Frame) => void) => {
        deliver = d;
      },
      release,
    };
  };
  const toB = mk();
  const toA = mk();
  return {
    a: toB.sink,
    b: toA.sink,
    connect(receiveA, receiveB) {
      toA.setDeliver(receiveA);
      toB.setDeliver(receiveB);
    },
    queued: () => ({ toA: toA.queue.length, toB: toB.queue.length }),
    written: () => ({ toA: toA.writes(), toB: toB.writes() }),
    close() {
      closed = true;
      toA.release();
      toB.release();
    },
  };
}
