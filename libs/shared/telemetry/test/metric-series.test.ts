import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  counterSeries,
  createMetricsRegistry,
  getOrCreateCounter,
  getOrCreateHistogram,
  MetricConflictError,
  MetricUsageError,
  SeriesHistogram,
} from '../src/index.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
// On a bound, between bounds, below the first, past the last.
const OBSERVED: Array<[string, number]> = [
  ['GET', 0.0005],
  ['GET', 0.001],
  ['GET', 0.05],
  ['POST', 0.1],
  ['GET', 7],
  ['POST', 0.25],
];

describe('SeriesHistogram', () => {
  it("renders what prom-client's own histogram renders for the same observations, text and JSON", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    ours.setDefaultLabels({ component: 'x' });
    theirs.setDefaultLabels({ component: 'x' });
    const h = new SeriesHistogram(
      { name: 'd_seconds', help: 'd', labelNames: ['method'], buckets: BUCKETS },
      ours,
    );
    const p = new Histogram({
      name: 'd_seconds',
      help: 'd',
      labelNames: ['method'],
      buckets: BUCKETS,
      registers: [theirs],
    });
    const get = h.series({ method: 'GET' });
    for (const [method, v] of OBSERVED) {
      if (method === 'GET') get.observe(v);
      else h.observe({ method }, v);
      p.observe({ method }, v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(await ours.metrics()).toContain('d_seconds_bucket{le="0.001",component="x",method="GET"} 2');
  });

  it('has its one series from the start when it has no labels, as prom-client has, and after reset', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const h = new SeriesHistogram({ name: 'plain_seconds', help: 'p', buckets: BUCKETS }, ours);
    const p = new Histogram({ name: 'plain_seconds', help: 'p', buckets: BUCKETS, registers: [theirs] });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    h.observe(0.5);
    p.observe(0.5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    h.reset();
    p.reset();
    // prom-client's reset drops even the unlabelled series; ours keeps it at zero (as at start).
    expect(await ours.metrics()).toContain('plain_seconds_count 0');
  });

  it('refuses labels it does not have, values that are not finite, and bad definitions', () => {
    const registry = new Registry();
    const h = new SeriesHistogram({ name: 'r_seconds', help: 'r', labelNames: ['method'] }, registry);
    expect(() => h.series({ verb: 'GET' } as never)).toThrow(MetricUsageError);
    expect(() => h.series({ method: 'GET' }).observe(Number.NaN)).toThrow(MetricUsageError);
    expect(() => h.observe({ method: 'GET' }, Number.POSITIVE_INFINITY)).toThrow(MetricUsageError);
    expect(() => new SeriesHistogram({ name: 'bad-name', help: 'b' }, registry)).toThrow(MetricUsageError);
    expect(() => new SeriesHistogram({ name: 'b1', help: 'b', labelNames: ['le'] }, registry)).toThrow(
      MetricUsageError,
    );
    expect(() => new SeriesHistogram({ name: 'b2', help: 'b', buckets: [1, 1] }, registry)).toThrow(
      MetricUsageError,
    );
  });

  it('is what getOrCreateHistogram makes, once per name, and conflicts are still refused', () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    const a = getOrCreateHistogram(registry, { name: 'x_seconds', help: 'x', labelNames: ['method'] });
    expect(a).toBeInstanceOf(SeriesHistogram);
    expect(getOrCreateHistogram(registry, { name: 'x_seconds', help: 'x', labelNames: ['method'] })).toBe(a);
    expect(() =>
      getOrCreateHistogram(registry, { name: 'x_seconds', help: 'x', labelNames: ['code'] }),
    ).toThrow(MetricConflictError);
    expect(() =>
      getOrCreateCounter(registry, { name: 'x_seconds', help: 'x', labelNames: ['method'] }),
    ).toThrow(MetricConflictError);
  });
});

describe('counterSeries', () => {
  it('hands its counts to the counter when it is scraped, once, next to plain inc', async () => {
    const registry = new Registry();
    const c = new Counter({
      name: 'req_total',
      help: 'r',
      labelNames: ['code', 'method'],
      registers: [registry],
    });
    const ok = counterSeries(c, { code: '2xx', method: 'GET' });
    const bad = counterSeries(c, { code: '5xx', method: 'GET' });
    ok.inc();
    ok.inc(2);
    bad.inc();
    c.inc({ code: '2xx', method: 'GET' });
    const first = await registry.metrics();
    expect(first).toContain('req_total{code="2xx",method="GET"} 4');
    expect(first).toContain('req_total{code="5xx",method="GET"} 1');
    // Scraped again with nothing new: the same values, not counted twice.
    expect(await registry.metrics()).toBe(first);
    ok.inc();
    expect(await registry.metrics()).toContain('req_total{code="2xx",method="GET"} 5');
    expect((await c.get()).values.find((v) => v.labels.code === '5xx')?.value).toBe(1);
  });

  it('keeps a collect function the counter already had, and a series with no count stays absent', async () => {
    const registry = new Registry();
    let collected = 0;
    const c = new Counter({
      name: 'own_total',
      help: 'o',
      labelNames: ['side'],
      registers: [registry],
      collect() {
        collected++;
      },
    });
    counterSeries(c, { side: 'a' });
    const b = counterSeries(c, { side: 'b' });
    b.inc();
    const text = await registry.metrics();
    expect(collected).toBe(1);
    expect(text).toContain('own_total{side="b"} 1');
    expect(text).not.toContain('side="a"');
  });

  it('refuses a label the counter does not have, and a count that is negative or not finite', () => {
    const c = new Counter({
      name: 'bad_total',
      help: 'b',
      labelNames: ['code'],
      registers: [new Registry()],
    });
    expect(() => counterSeries(c, { verb: 'GET' } as never)).toThrow(MetricUsageError);
    const s = counterSeries(c, { code: '2xx' });
    expect(() => s.inc(-1)).toThrow(MetricUsageError);
    expect(() => s.inc(Number.NaN)).toThrow(MetricUsageError);
    expect(() => s.inc(Number.POSITIVE_INFINITY)).toThrow(MetricUsageError);
  });
});
