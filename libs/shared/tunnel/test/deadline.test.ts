import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryLink,
  Deadline,
  type LogicalStream,
  Multiplexer,
  TunnelErrorCode,
} from '../src/index.js';
import { flatten, settle } from './support.js';

// Only the clock and timers are fake: the memory link's setImmediate delivery stays real.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

function pair(onStream: (s: LogicalStream) => void) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream });
  const resets: string[] = [];
  link.connect(
    (m) => {
      for (const f of flatten(m)) if (f.kind.case === 'reset') resets.push(f.kind.value.message);
      gateway.receive(m);
    },
    (m) => agent.receive(m),
  );
  return { gateway, agent, link, resets };
}

const get = (path: string, timeoutMs: number) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
  timeoutMs,
});

describe('responder deadline (Open.timeout_ms)', () => {
  it('resets a stream that has not answered in time, on both sides, with DEADLINE_EXCEEDED', async () => {
    const served: LogicalStream[] = [];
    const { gateway, agent, link, resets } = pair((s) => served.push(s));
    const s = gateway.open(get('/slow', 1_000));
    const failed = s.responseHead().catch((e: unknown) => e);
    await settle(link);
    const work = served[0]!;
    vi.advanceTimersByTime(999);
    expect(work.destroyed).toBe(false);
    vi.advanceTimersByTime(1);
    // The handler's stream fails at once: work not started must not start, work under way stops.
    expect(work.destroyed).toBe(true);
    expect(work.errored).toMatchObject({ code: TunnelErrorCode.DEADLINE_EXCEEDED });
    expect(await failed).toMatchObject({ code: TunnelErrorCode.DEADLINE_EXCEEDED });
    expect(resets).toEqual(["no response within the requester's timeout of 1000 ms"]);
    expect(agent.activeStreams).toBe(0);
  });

  it('leaves a stream that answered in time alone, however long its body takes', async () => {
    const served: LogicalStream[] = [];
    const { gateway, link } = pair((s) => {
      served.push(s);
      s.respond(200);
      s.write('first ');
    });
    const s = gateway.open(get('/list', 1_000));
    expect((await s.responseHead()).status).toBe(200);
    vi.advanceTimersByTime(60_000);
    await settle(link);
    served[0]!.end('and the rest');
    expect(await text(s)).toBe('first and the rest');
  });

  it('arms one timer for many streams and expires each at its own deadline', async () => {
    const served = new Map<string, LogicalStream>();
    const { gateway, link } = pair((s) => {
      served.set(s.open.head.case === 'http' ? s.open.head.value.path : '', s);
    });
    const timeouts = [3_000, 1_000, 2_000, 0];
    for (const t of timeouts)
      gateway
        .open(get(`/t${t}`, t))
        .responseHead()
        .catch(() => undefined);
    await settle(link);
    expect(vi.getTimerCount()).toBe(1);
    const alive = () => [...served].filter(([, s]) => !s.destroyed).map(([p]) => p);
    vi.advanceTimersByTime(1_000);
    expect(alive()).toEqual(['/t3000', '/t2000', '/t0']);
    vi.advanceTimersByTime(1_000);
    expect(alive()).toEqual(['/t3000', '/t0']);
    vi.advanceTimersByTime(1_000);
    // No timeout: a watch or a followed log runs as long as it likes.
    expect(alive()).toEqual(['/t0']);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('Deadline', () => {
  it('is read off the clock once: what is left shrinks as time passes, and what an Open carries with it', () => {
    const d = Deadline.after(30_000);
    expect(d).toMatchObject({ timeoutMs: 30_000, isSet: true });
    expect(d.openTimeoutMs()).toBe(30_000);
    vi.advanceTimersByTime(12_000);
    expect(d.remainingMs()).toBe(18_000);
    expect(d.openTimeoutMs()).toBe(18_000);
    expect(d.expired()).toBe(false);
    vi.advanceTimersByTime(18_000);
    expect(d.expired()).toBe(true);
    expect(d.remainingMs()).toBe(0);
    // Past it, an Open still says "a deadline" (0 would mean none): the least there is.
    expect(d.openTimeoutMs()).toBe(1);
  });

  it('fires its timer at the instant it passes, once, unless cancelled', () => {
    const d = Deadline.after(1_000);
    vi.advanceTimersByTime(400);
    const fired: string[] = [];
    d.onExpiry(() => fired.push('a'));
    const cancel = d.onExpiry(() => fired.push('b'));
    vi.advanceTimersByTime(599);
    expect(fired).toEqual([]);
    cancel();
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['a']);
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual(['a']);
  });

  it('is none for a timeout of 0: nothing expires, an Open carries none, no timer is armed', () => {
    const d = Deadline.after(0);
    expect(d).toBe(Deadline.NONE);
    expect(d.isSet).toBe(false);
    expect(d.openTimeoutMs()).toBe(0);
    const fired: string[] = [];
    d.onExpiry(() => fired.push('x'));
    vi.advanceTimersByTime(365 * 24 * 3_600_000);
    expect(d.expired()).toBe(false);
    expect(fired).toEqual([]);
  });
});
