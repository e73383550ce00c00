import { Writable } from 'node:stream';
import { expect, it } from 'vitest';
import { writableFrameTransport } from '../src/index.js';

/** A writable that holds every write until `release` is called: backpressured from the first. */
function heldWritable() {
  const held: Array<() => void> = [];
  const w = new Writable({
    highWaterMark: 1,
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
  const transport = writableFrameTransport(w, () => true);
  w.write(Buffer.from('x'));
  expect(transport.needsDrain).toBe(true);
  const waiters = Array.from({ length: 50 }, () => transport.drained());
  // One waiter's worth of listeners, not fifty (Node warns past ten).
  expect(w.listenerCount('drain')).toBe(1);
  expect(w.listenerCount('error')).toBeLessThanOrEqual(2);
  release();
  await Promise.all(waiters);
  expect(w.listenerCount('drain')).toBe(0);
  // A later backpressure waits afresh.
  w.write(Buffer.from('y'));
  const again = transport.drained();
  expect(w.listenerCount('drain')).toBe(1);
  release();
  await again;
});

it('releases waiters when the writable closes instead of draining', async () => {
  const { w } = heldWritable();
  const transport = writableFrameTransport(w, () => true);
  w.write(Buffer.from('x'));
  const waiters = Array.from({ length: 5 }, () => transport.drained());
  w.destroy();
  await Promise.all(waiters);
  expect(transport.closed).toBe(true);
});
