import { decodeFrame, encodeFrame, type Frame } from '@pullplane/proto';
import { FrameBatcher, type FrameSink } from './frame-channel.js';
import type { LogicalStream } from './logical-stream.js';
import { Multiplexer } from './multiplexer.js';

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
  /**
   * Resolves once the link has been idle (nothing queued either way, nothing written) for
   * `quietTurns` turns of the event loop: everything the two sides had to say to each other has
   * been said. No timers: a stalled stream shows as a quiet link, not as time passing.
   */
  settle(quietTurns?: number): Promise<void>;
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
    // The after-write callback of each queued message (delivered = written), in queue order.
    const dones: Array<(() => void) | undefined> = [];
    const onClose: Array<() => void> = [];
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
        const done = dones.shift();
        deliver(Buffer.isBuffer(m) ? decodeFrame(m) : m);
        done?.();
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
      write(message, done) {
        writes++;
        queue.push(encode ? encodeFrame(message) : message);
        dones.push(done);
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
      onClose(cb) {
        onClose.push(cb);
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
      closed: () => {
        for (const cb of onClose.splice(0)) cb();
      },
    };
  };
  const toB = mk();
  const toA = mk();
  const queued = () => ({ toA: toA.queue.length, toB: toB.queue.length });
  const written = () => ({ toA: toA.writes(), toB: toB.writes() });
  return {
    a: toB.sink,
    b: toA.sink,
    connect(receiveA, receiveB) {
      toA.setDeliver(receiveA);
      toB.setDeliver(receiveB);
    },
    queued,
    written,
    async settle(quietTurns = 4) {
      let quiet = 0;
      let lastWritten = -1;
      while (quiet < quietTurns) {
        await new Promise((r) => setImmediate(r));
        const q = queued();
        const w = written();
        const total = w.toA + w.toB;
        quiet = q.toA === 0 && q.toB === 0 && total === lastWritten ? quiet + 1 : 0;
        lastWritten = total;
      }
    },
    close() {
      closed = true;
      toA.release();
      toB.release();
      toA.closed();
      toB.closed();
    },
  };
}

/**
 * A requester (odd stream ids, as a proxy's link opens them) and an agent side (even ids) joined
 * by a memory link; the agent side hands every stream it is opened to `onStream`.
 */
export function memoryTunnel(
  onStream: (s: LogicalStream) => void,
  opts?: { highWaterFrames?: number; encode?: boolean },
): { requester: Multiplexer; agent: Multiplexer; link: MemoryLink } {
  const link = createMemoryLink(opts);
  const requester = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream });
  link.connect(
    (f) => requester.receive(f),
    (f) => agent.receive(f),
  );
  return { requester, agent, link };
}
