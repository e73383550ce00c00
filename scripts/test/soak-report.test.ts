import { describe, expect, it } from 'vitest';
import {
  errorLines,
  failureWindow,
  HANG_GRACE_MS,
  isHang,
  judgeLiveHeap,
  judgeReplicaDescriptors,
  outcomesByKind,
  pubsubLoss,
  resourceReturn,
  verdict,
  watchLoss,
  // @ts-expect-error: a plain .mjs script without declarations
} from '../soak/report.mjs';

interface Rec {
  kind: string;
  agent: string;
  start: number;
  end: number | undefined;
  deadlineMs: number;
  outcome: 'ok' | 'failed' | 'timeout';
}
const rec = (over: Partial<Rec>): Rec => ({
  kind: 'get',
  agent: 'a',
  start: 0,
  end: 100,
  deadlineMs: 5_000,
  outcome: 'ok',
  ...over,
});

describe('hang detection', () => {
  it('calls a request a hang only when it outlived its deadline by more than the grace', () => {
    expect(HANG_GRACE_MS).toBe(1_000);
    expect(isHang(rec({ end: 6_000 }), 10_000)).toBe(false); // exactly deadline + grace
    expect(isHang(rec({ end: 6_001 }), 10_000)).toBe(true);
    expect(isHang(rec({ end: 5_500, outcome: 'timeout' }), 10_000)).toBe(false);
  });

  it('judges an unfinished request by the time now', () => {
    expect(isHang(rec({ end: undefined }), 6_000)).toBe(false);
    expect(isHang(rec({ end: undefined }), 6_001)).toBe(true);
  });

  it('counts each request once per kind: a hang is not also a failure, the undecided are left out', () => {
    const out = outcomesByKind(
      [
        rec({}),
        rec({ outcome: 'failed' }),
        rec({ outcome: 'timeout', end: 5_200 }),
        rec({ outcome: 'failed', end: 9_000 }),
        rec({ end: undefined }),
        rec({ kind: 'redis', end: undefined, start: -10_000 }),
      ],
      5_000,
    );
    expect(out.get).toEqual({ total: 4, ok: 1, failed: 1, timedOut: 1, hangs: 1 });
    expect(out.redis).toEqual({ total: 1, ok: 0, failed: 0, timedOut: 0, hangs: 1 });
  });
});

describe('failure windows', () => {
  const fault = { name: 'kill -9 gateway-1', at: 10_000 };

  it('runs from the fault to the end of the first success that started after each agent failed', () => {
    const records = [
      rec({ agent: 'a', start: 9_000, end: 9_100 }), // before the fault: not counted
      rec({ agent: 'a', start: 10_100, end: 10_300, outcome: 'failed' }),
      rec({ agent: 'a', start: 11_000, end: 12_500 }), // a's window: 2.5 s
      rec({ agent: 'b', start: 10_200, end: 10_400, outcome: 'timeout' }),
      rec({ agent: 'b', start: 10_150, end: 10_500 }), // started before b's failure: no proof
      rec({ agent: 'b', start: 14_000, end: 14_000 }), // b's window: 4 s
      rec({ agent: 'c', start: 10_500, end: 10_600 }), // never failed: not affected
    ];
    expect(failureWindow(fault, records, 60_000)).toEqual({
      name: fault.name,
      at: 10_000,
      affectedAgents: 2,
      failures: 2,
      firstMs: 2_500,
      medianMs: 2_500,
      lastMs: 4_000,
      unrecovered: 0,
    });
  });

  it('counts a request in flight at the fault from the fault, and a hang as a failure', () => {
    const records = [
      rec({ agent: 'a', start: 8_000, end: 15_000, outcome: 'failed' }),
      rec({ agent: 'a', start: 12_000, end: 12_100 }), // began after the fault, before a's failure ended
      rec({ agent: 'b', start: 10_000, end: 17_000 }), // ok, but a hang
      rec({ agent: 'b', start: 20_000, end: 20_100 }),
    ];
    const w = failureWindow(fault, records, 60_000);
    expect(w.affectedAgents).toBe(2);
    expect([w.firstMs, w.lastMs]).toEqual([2_100, 10_100]);
  });

  it('names agents with no success before the next fault, and keeps to the agents in scope', () => {
    const records = [
      rec({ agent: 'a', start: 10_100, end: 10_200, outcome: 'failed' }),
      rec({ agent: 'a', start: 30_000, end: 30_100 }), // after `until`
      rec({ agent: 'z', start: 10_100, end: 10_200, outcome: 'failed' }),
    ];
    const w = failureWindow({ ...fault, agents: ['a'] }, records, 20_000);
    expect(w).toMatchObject({ affectedAgents: 1, unrecovered: 1, firstMs: undefined, lastMs: undefined });
  });
});

describe('loss accounting', () => {
  it('counts watch events emitted after the watch began and never seen', () => {
    expect(
      watchLoss({ emitted: ['5', '7', '9', '11', '13'], seen: ['9', '11', '11'], fromRv: '5', toRv: '11' }),
    ).toEqual({ emitted: 3, seen: 2, lost: 1, duplicates: 1 });
  });

  it('compares resourceVersions as numbers, not strings', () => {
    expect(watchLoss({ emitted: ['9', '10', '100'], seen: ['10', '100'], fromRv: '9', toRv: '100' })).toEqual(
      {
        emitted: 2,
        seen: 2,
        lost: 0,
        duplicates: 0,
      },
    );
  });

  it('tells pub/sub messages lost while subscribed from those missed while away or in flight', () => {
    const out = pubsubLoss({
      published: [
        { seq: 1, at: 100 }, // received
        { seq: 2, at: 200 }, // lost while subscribed
        { seq: 3, at: 1_900 }, // in the last second before the disconnect at 2000
        { seq: 4, at: 2_500 }, // away
        { seq: 5, at: 3_500 }, // received after resubscribing
        { seq: 6, at: 9_000 }, // lost on the still-open subscription
      ],
      received: [1, 5, 5],
      intervals: [
        { from: 0, to: 2_000 },
        { from: 3_000, to: undefined },
      ],
    });
    expect(out).toEqual({ published: 6, received: 2, lost: 2, lostAtDisconnect: 1, missedWhileAway: 1 });
  });
});

describe('resources back to baseline', () => {
  const series = (from: number, to: number, rss: number, fds: number) =>
    Array.from({ length: to - from }, (_, i) => ({ t: from + i, rss, fds }));

  it('passes an end within tolerance and reports the peak', () => {
    const s = [
      ...series(0, 10, 100_000, 40),
      ...series(10, 20, 400_000, 300),
      ...series(20, 30, 150_000, 50),
    ];
    const r = resourceReturn(s, { from: 0, to: 10 }, { from: 20, to: 30 });
    expect(r).toMatchObject({
      peakRssKb: 400_000,
      peakFds: 300,
      baseRssKb: 100_000,
      endRssKb: 150_000,
      returned: true,
    });
  });

  it('fails an RSS or a descriptor count that stayed up', () => {
    const base = series(0, 10, 100_000, 40);
    const rssUp = resourceReturn(
      [...base, ...series(20, 30, 160_000, 40)],
      { from: 0, to: 10 },
      { from: 20, to: 30 },
    );
    const fdsUp = resourceReturn(
      [...base, ...series(20, 30, 100_000, 65)],
      { from: 0, to: 10 },
      { from: 20, to: 30 },
    );
    expect([rssUp.returned, fdsUp.returned]).toEqual([false, false]);
  });

  it("judges replicas' descriptors together (kept-alive clients move between them), RSS each alone", () => {
    const judged = (baseFds: number, endFds: number, endRss = 100_000) =>
      resourceReturn(
        [...series(0, 10, 100_000, baseFds), ...series(20, 30, endRss, endFds)],
        { from: 0, to: 10 },
        { from: 20, to: 30 },
      );
    // One replica's clients moved to the other: each alone fails, the pair has what it had.
    const moved = judgeReplicaDescriptors({ 'proxy-1': judged(104, 144), 'proxy-2': judged(105, 64) });
    expect(judged(104, 144).returned).toBe(false);
    expect([moved['proxy-1']!.returned, moved['proxy-2']!.returned]).toEqual([true, true]);
    expect(moved['proxy-1']!.fdsJudgedWith).toEqual(['proxy-1', 'proxy-2']);
    // Both up: the pair fails.
    const leaked = judgeReplicaDescriptors({ 'proxy-1': judged(104, 160), 'proxy-2': judged(105, 150) });
    expect([leaked['proxy-1']!.returned, leaked['proxy-2']!.returned]).toEqual([false, false]);
    // RSS stays per process: the pair's descriptors do not excuse one replica's memory.
    const rss = judgeReplicaDescriptors({
      'proxy-1': judged(104, 104, 200_000),
      'proxy-2': judged(105, 105),
    });
    expect([rss['proxy-1']!.returned, rss['proxy-2']!.returned]).toEqual([false, true]);
    // A process without replicas is left as it was.
    const alone = judgeReplicaDescriptors({ simulator: judged(40, 80) });
    expect(alone.simulator!.returned).toBe(false);
  });

  it('judges a process on its live heap when given one, its descriptors as before', () => {
    const rssUp = resourceReturn(
      [...series(0, 10, 400_000, 40), ...series(20, 30, 600_000, 40)],
      { from: 0, to: 10 },
      { from: 20, to: 30 },
    );
    const MiB = 1024 * 1024;
    const heap = (heapUsed: number) => ({ heapUsed: heapUsed * MiB, external: 10 * MiB });
    expect(rssUp.returned).toBe(false);
    expect(judgeLiveHeap(rssUp, { before: heap(200), end: heap(230) })).toMatchObject({
      returned: true,
      liveHeap: { beforeKb: 210 * 1024, endKb: 240 * 1024 },
    });
    expect(judgeLiveHeap(rssUp, { before: heap(200), end: heap(320) }).returned).toBe(false);
    const fdsUp = { ...rssUp, fdsReturned: false };
    expect(judgeLiveHeap(fdsUp, { before: heap(200), end: heap(200) }).returned).toBe(false);
  });

  it('does not judge a process with no samples in a window', () => {
    expect(resourceReturn(series(0, 10, 1, 1), { from: 0, to: 10 }, { from: 20, to: 30 })).toMatchObject({
      judged: false,
      returned: true,
    });
  });
});

describe('verdict and logs', () => {
  it('counts pino lines at error level and above, nothing else', () => {
    expect(
      errorLines([
        '{"level":50,"msg":"x"}',
        '{"level":60}',
        '{"level":40}',
        'plain error text',
        '{"level":50',
      ]),
    ).toBe(2);
  });

  it('fails on any hang and on any process that did not come back', () => {
    const ok = { requests: { get: { hangs: 0 } }, processes: { g: { returned: true } } };
    expect(verdict(ok)).toEqual({ pass: true, hangs: 0, reasons: [] });
    const bad = { requests: { get: { hangs: 2 } }, processes: { g: { returned: false } } };
    expect(verdict(bad).pass).toBe(false);
    expect(verdict(bad).reasons).toEqual(['2 hang(s)', 'resources did not return to baseline: g']);
  });
});
