import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReplyWaiters } from '../src/index.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('ReplyWaiters', () => {
  it('hands replies to the oldest first, times out only the one that waited too long, and drains the rest', () => {
    vi.useFakeTimers();
    const timeouts: number[] = [];
    const q = new ReplyWaiters<{ sentAt: number; id: number }>(100, () => timeouts.push(Date.now()));
    const t0 = Date.now();
    q.push({ sentAt: t0, id: 1 });
    vi.advanceTimersByTime(60);
    q.push({ sentAt: Date.now(), id: 2 });
    q.push({ sentAt: Date.now(), id: 3 });
    expect(q.shift()?.id).toBe(1);
    // The first answered in time; the timer now waits for the second, sent at +60 ms.
    vi.advanceTimersByTime(90);
    expect(timeouts).toEqual([]);
    vi.advanceTimersByTime(10);
    expect(timeouts).toEqual([t0 + 160]);
    expect(q.peek()?.id).toBe(2);
    expect(q.drain().map((w) => w.id)).toEqual([2, 3]);
    expect(q.shift()).toBeUndefined();
    // Drained: no timer is left to fire.
    vi.advanceTimersByTime(1_000);
    expect(timeouts).toHaveLength(1);
  });

  it('keeps order across many replies (the taken part is dropped as it grows)', () => {
    const q = new ReplyWaiters<{ sentAt: number; id: number }>(60_000, () => undefined);
    const got: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      q.push({ sentAt: Date.now(), id: i });
      if (i % 3 === 2) for (let j = 0; j < 2; j++) got.push(q.shift()!.id);
    }
    got.push(...q.drain().map((w) => w.id));
    expect(got).toEqual(Array.from({ length: 5_000 }, (_, i) => i));
  });
});
