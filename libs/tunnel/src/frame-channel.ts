import { type EventEmitter, once } from 'node:events';
import type { Writable } from 'node:stream';
import { type Frame, frame } from '@pullplane/proto';

/**
 * Where a multiplexer writes frames. `send` returning false means the transport is
 * backpressured: await `drained()` before sending more.
 */
export interface FrameSink {
  send(frame: Frame): boolean;
  drained(): Promise<void>;
  /** Writes out frames still held for coalescing (call before ending the transport). */
  flush?(): void;
}

/** The parts of an object-mode writable of Frames (a grpc-js bidi call) that we use. */
export type FrameWritable = Pick<Writable, 'write' | 'destroyed' | 'writableEnded' | 'writableNeedDrain'> &
  EventEmitter;

/** A batch is flushed early past this many payload bytes, well under gRPC's 4 MiB message limit. */
const MAX_BATCH_BYTES = 1024 * 1024;

function payloadBytes(f: Frame): number {
  return f.kind.case === 'data' ? f.kind.value.chunk.byteLength : 64;
}

/**
 * Adapts an object-mode duplex of Frames (a grpc-js bidi call) into a FrameSink. Frames sent
 * in the same turn of the event loop are coalesced into one Batch message: each gRPC
 * message costs framing, a protobuf pass and an HTTP/2 DATA frame on both ends.
 */
export function duplexFrameSink(duplex: FrameWritable): FrameSink {
  let pending: Frame[] = [];
  let pendingBytes = 0;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0 || duplex.destroyed || duplex.writableEnded) {
      pending = [];
      pendingBytes = 0;
      return;
    }
    const out = pending.length === 1 ? pending[0]! : frame({ case: 'batch', value: { frames: pending } });
    pending = [];
    pendingBytes = 0;
    duplex.write(out);
  };
  return {
    flush,
    send(f) {
      if (duplex.destroyed || duplex.writableEnded) return true;
      pending.push(f);
      pendingBytes += payloadBytes(f);
      if (pendingBytes >= MAX_BATCH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
      return !duplex.writableNeedDrain;
    },
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
