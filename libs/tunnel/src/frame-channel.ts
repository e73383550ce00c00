import { type EventEmitter, once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Frame } from '@pullplane/proto';

/**
 * Where a multiplexer writes frames. `send` returning false means the transport is
 * backpressured: await `drained()` before sending more.
 */
export interface FrameSink {
  send(frame: Frame): boolean;
  drained(): Promise<void>;
}

/** The parts of an object-mode writable of Frames (a grpc-js bidi call) that we use. */
export type FrameWritable = Pick<Writable, 'write' | 'destroyed' | 'writableEnded' | 'writableNeedDrain'> &
  EventEmitter;

/** Adapts an object-mode duplex of Frames (a grpc-js bidi call) into a FrameSink. */
export function duplexFrameSink(duplex: FrameWritable): FrameSink {
  return {
    send(frame) {
      if (duplex.destroyed || duplex.writableEnded) return true;
      return duplex.write(frame);
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
