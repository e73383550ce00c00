import { Writable } from 'node:stream';
import { expect, it } from 'vitest';
import { TRANSPORT_HIGH_WATER, writableFrameTransport } from '../src/index.js';

/** A writable that holds every write until `release` is called (backpressured from the first by default). */
function heldWritable(highWaterMark = 1) {
  const held: Array<() => void> = [];
  const w = new Writable({
    highWaterMark,
    write(_chunk, _enc, cb) {
      held.push(cb);
    },
  });
  const release = () => {
    for (const cb of held.splice(0)) cb();
  };
  return { w, release };
}

it('lets any number of held-back writers wait on one drain: one set of listeners, all released together', async () => {
  const { w, release } = heldWritable();
  const transport = writableFrameTransport(w, () => true, 1);
  w.write(Buffer.from('x'));
  expect(transport.needsDrain).toBe(true);
  const closeListeners = w.listenerCount('close');
  const waiters = Array.from({ length: 50 }, () => transport.drained());
  // One waiter's worth of listeners, not fifty (Node warns past ten), and nothing per wait
  // beyond them (no AbortSignal listeners, no error listeners).
  expect(w.listenerCount('drain')).toBe(1);
  expect(w.listenerCount('close')).toBe(closeListeners + 1);
  expect(w.listenerCount('error')).toBe(0);
  release();
  await Promise.all(waiters);
  expect(w.listenerCount('drain')).toBe(0);
  expect(w.listenerCount('close')).toBe(closeListeners);
  // A later backpressure waits afresh.
  w.write(Buffer.from('y'));
  const again = transport.drained();
  expect(w.listenerCount('drain')).toBe(1);
  release();
  await again;
});

it('releases waiters when the writable closes instead of draining', async () => {
  const { w } = heldWritable();
  const transport = writableFrameTransport(w, () => true, 1);
  w.write(Buffer.from('x'));
  const waiters = Array.from({ length: 5 }, () => transport.drained());
  w.destroy();
  await Promise.all(waiters);
  expect(transport.closed).toBe(true);
});

it('holds writers back only past the transport high-water mark, not the writable’s own (16 KiB for HTTP/2 streams)', async () => {
  // Writes wait until opened, then each completes a turn later (as an HTTP/2 stream's do).
  let open = false;
  const held: Array<() => void> = [];
  const w = new Writable({
    highWaterMark: 16 * 1024,
    write(_chunk, _enc, cb) {
      if (open) setImmediate(cb);
      else held.push(cb);
    },
  });
  const transport = writableFrameTransport(w, () => true);
  // A turn of small messages (eight 4 KiB replies) is past the writable's mark, not the transport's.
  for (let i = 0; i < 8; i++) w.write(Buffer.alloc(4096));
  expect(w.writableNeedDrain).toBe(true);
  expect(transport.needsDrain).toBe(false);
  // Past the transport's mark, writers wait until the writable has written everything.
  w.write(Buffer.alloc(TRANSPORT_HIGH_WATER));
  expect(transport.needsDrain).toBe(true);
  const unwrittenWhenReleased = transport.drained().then(() => w.writableLength);
  open = true;
  for (const cb of held.splice(0)) cb();
  expect(await unwrittenWhenReleased).toBe(0);
  expect(transport.needsDrain).toBe(false);
});
