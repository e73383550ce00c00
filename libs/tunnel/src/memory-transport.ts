import { decodeFrame, encodeFrame, type Frame } from '@pullplane/proto';
import type { FrameSink } from './frame-channel.js';

export interface MemoryLink {
  /** Sink for side A; frames arrive at B's receiver. */
  a: FrameSink;
  /** Sink for side B; frames arrive at A's receiver. */
  b: FrameSink;
  connect(receiveA: (f: Frame) => void, receiveB: (f: Frame) => void): void;
  /** Frames queued but not yet delivered, per direction. */
  queued(): { toA: number; toB: number };
  close(): void;
}

/**
 * An in-process frame link with asynchronous delivery and transport backpressure, for tests
 * and the all-in-one mode's unit tests. Frames go through protobuf encoding so the wire
 * format is exercised too.
 */
export function createMemoryLink(opts: { highWaterFrames?: number; encode?: boolean } = {}): MemoryLink {
  const hwm = opts.highWaterFrames ?? 64;
  const encode = opts.encode ?? true;
  let closed = false;
  const mk = () => {
    const queue: Frame[] = [];
    let deliver: ((f: Frame) => void) | undefined;
    let waiters: Array<() => void> = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      while (queue.length > 0 && deliver && !closed) deliver(queue.shift()!);
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    };
    const sink: FrameSink = {
      send(f) {
        if (closed) return true;
        queue.push(encode ? decodeFrame(encodeFrame(f)) : f);
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
    };
    return {
      sink,
      queue,
      setDeliver: (d: (f: Frame) => void) => {
        deliver = d;
      },
      release: () => {
        const w = waiters;
        waiters = [];
        for (const wake of w) wake();
      },
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
    close() {
      closed = true;
      toA.release();
      toB.release();
    },
  };
}
