import { Counter, register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  createMetricsRegistry,
  getOrCreateCounter,
  getOrCreateGauge,
  getOrCreateHistogram,
  getOrCreateSummary,
  MetricConflictError,
  metricName,
} from '../src/index.js';

describe('createMetricsRegistry', () => {
  it('collects default process metrics into its own registry, not the global one', async () => {
    const before = (await globalRegistry.getMetricsAsJSON()).length;
    const registry = createMetricsRegistry({ prefix: 'pullplane_' });
    const text = await registry.metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect((await globalRegistry.getMetricsAsJSON()).length).toBe(before);
  });

  it('can prefix default metrics or skip them', async () => {
    const prefixed = createMetricsRegistry({ defaultMetricsPrefix: 'pullplane_' });
    expect(await prefixed.metrics()).toContain('pullplane_process_cpu_user_seconds_total');
    const bare = createMetricsRegistry({ collectDefaultMetrics: false });
    expect(await bare.metrics()).toBe('\n');
  });

  it('supports several registries in one process (all-in-one mode)', () => {
    expect(() => {
      createMetricsRegistry();
      createMetricsRegistry();
    }).not.toThrow();
  });

  it('applies default labels', async () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false, defaultLabels: { app: 'agent' } });
    getOrCreateCounter(registry, { name: 'events_total', help: 'Events.' }).inc();
    expect(await registry.metrics()).toContain('pullplane_events_total{app="agent"} 1');
  });
});

describe('getOrCreate helpers', () => {
  it('prefixes names once', () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    expect(metricName(registry, 'x_total')).toBe('pullplane_x_total');
    expect(metricName(registry, 'pullplane_x_total')).toBe('pullplane_x_total');
    const custom = createMetricsRegistry({ collectDefaultMetrics: false, prefix: 'pp_' });
    const gauge = getOrCreateGauge(custom, { name: 'g', help: 'G.' });
    expect(custom.getSingleMetric('pp_g')).toBe(gauge);
    expect(custom.getSingleMetric('pp_pp_g')).toBeUndefined();
    expect(getOrCreateGauge(custom, { name: 'pp_g', help: 'G.' })).toBe(gauge);
  });

  it('returns the already registered metric', async () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    const config = { name: 'tunnel_streams_total', help: 'Streams.', labelNames: ['agent'] as const };
    const a = getOrCreateCounter(registry, config);
    const b = getOrCreateCounter(registry, { ...config, labelNames: ['agent'] });
    const c = getOrCreateCounter(registry, { ...config, name: 'pullplane_tunnel_streams_total' });
    expect(b).toBe(a);
    expect(c).toBe(a);
    a.inc({ agent: 'x' });
    b.inc({ agent: 'x' });
    expect(await registry.metrics()).toContain('pullplane_tunnel_streams_total{agent="x"} 2');
    expect(getOrCreateGauge(registry, { name: 'g', help: 'G.' })).toBe(
      getOrCreateGauge(registry, { name: 'g', help: 'G.' }),
    );
    const h = getOrCreateHistogram(registry, { name: 'h_seconds', help: 'H.', buckets: [0.1, 1] });
    expect(getOrCreateHistogram(registry, { name: 'h_seconds', help: 'H.' })).toBe(h);
    const s = getOrCreateSummary(registry, { name: 's', help: 'S.' });
    expect(getOrCreateSummary(registry, { name: 's', help: 'S.' })).toBe(s);
  });

  it('keeps registries independent', () => {
    const r1 = createMetricsRegistry({ collectDefaultMetrics: false });
    const r2 = createMetricsRegistry({ collectDefaultMetrics: false });
    const a = getOrCreateCounter(r1, { name: 'c_total', help: 'C.' });
    const b = getOrCreateCounter(r2, { name: 'c_total', help: 'C.' });
    expect(a).not.toBe(b);
  });

  it('finds metrics registered directly on the registry', () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    const direct = new Counter({ name: 'pullplane_direct_total', help: 'D.', registers: [registry] });
    expect(getOrCreateCounter(registry, { name: 'direct_total', help: 'D.' })).toBe(direct);
  });

  it('throws on type or label conflicts', () => {
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    const m = getOrCreateCounter(registry, { name: 'm', help: 'M.', labelNames: ['a', 'b'] });
    // The same label set in another order is the same metric, not a conflict.
    expect(getOrCreateCounter(registry, { name: 'm', help: 'M.', labelNames: ['b', 'a'] })).toBe(m);
    expect(() => getOrCreateGauge(registry, { name: 'm', help: 'M.' })).toThrow(MetricConflictError);
    try {
      getOrCreateCounter(registry, { name: 'm', help: 'M.', labelNames: ['a'] });
      expect.unreachable();
    } catch (err) {
      expect((err as MetricConflictError).code).toBe('TELEMETRY_METRIC_CONFLICT');
      expect((err as Error).message).toContain('[a, b], not [a]');
    }
  });
});
