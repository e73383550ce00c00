import {
  Counter,
  type CounterConfiguration,
  collectDefaultMetrics,
  Gauge,
  type GaugeConfiguration,
  Registry,
  Summary,
  type SummaryConfiguration,
} from 'prom-client';
import { MetricConflictError } from './errors.js';
import { SeriesHistogram, type SeriesHistogramConfiguration } from './series-histogram.js';

export interface CreateMetricsRegistryOptions {
  /** Prepended to names given to the `getOrCreate*` helpers unless already present. */
  readonly prefix?: string;
  /** Labels added to every series of this registry (e.g. `{ component: 'stream-gateway' }`). */
  readonly defaultLabels?: Record<string, string>;
  /** Collect prom-client's process/Node.js metrics; on by default. */
  readonly collectDefaultMetrics?: boolean;
  /**
   * Prefix for the default process metrics. Empty by default so stock dashboards
   * (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`) work unchanged.
   */
  readonly defaultMetricsPrefix?: string;
}

export const DEFAULT_METRIC_PREFIX = 'pullplane_';

const prefixes = new WeakMap<Registry, string>();

/**
 * A fresh registry (never prom-client's global one: the all-in-one mode runs several apps in
 * one process, each with its own registry).
 */
export function createMetricsRegistry(opts: CreateMetricsRegistryOptions = {}): Registry {
  const registry = new Registry();
  prefixes.set(registry, opts.prefix ?? DEFAULT_METRIC_PREFIX);
  if (opts.defaultLabels) registry.setDefaultLabels(opts.defaultLabels);
  if (opts.collectDefaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: opts.defaultMetricsPrefix ?? '' });
  }
  return registry;
}

/** The registry's prefix applied to `name` (idempotent). */
export function metricName(registry: Registry, name: string): string {
  const prefix = prefixes.get(registry) ?? '';
  return name.startsWith(prefix) ? name : `${prefix}${name}`;
}

type MetricClass<M> = abstract new (...args: never[]) => M;

/** `prefix: false` registers the name exactly as given (argocd-agent's `argocd_*` names). */
export interface MetricNameOptions {
  readonly prefix?: false;
}

function getOrCreate<M>(
  registry: Registry,
  kind: MetricClass<M>,
  kindName: string,
  config: { name: string; labelNames?: readonly string[] },
  create: (name: string) => M,
  naming: MetricNameOptions = {},
): M {
  const name = naming.prefix === false ? config.name : metricName(registry, config.name);
  const existing = registry.getSingleMetric(name);
  if (existing === undefined) return create(name);
  if (!(existing instanceof kind)) {
    throw new MetricConflictError(`metric ${name} is already registered as another type, not a ${kindName}`);
  }
  const have = [...((existing as { labelNames?: readonly string[] }).labelNames ?? [])].sort();
  const want = [...(config.labelNames ?? [])].sort();
  if (have.join(',') !== want.join(',')) {
    throw new MetricConflictError(
      `metric ${name} is already registered with labels [${have.join(', ')}], not [${want.join(', ')}]`,
    );
  }
  return existing;
}

/**
 * Returns the counter registered under this name, creating it on first use, so modules shared by
 * several apps can declare their metrics without "already registered" errors. Type or label-set
 * mismatches throw `MetricConflictError`; other settings (help, buckets) are those of the first call.
 */
export function getOrCreateCounter<T extends string = string>(
  registry: Registry,
  config: Omit<CounterConfiguration<T>, 'registers'>,
  naming?: MetricNameOptions,
): Counter<T> {
  return getOrCreate(
    registry,
    Counter<T>,
    'counter',
    config,
    (name) => new Counter<T>({ ...config, name, registers: [registry] }),
    naming,
  );
}

export function getOrCreateGauge<T extends string = string>(
  registry: Registry,
  config: Omit<GaugeConfiguration<T>, 'registers'>,
  naming?: MetricNameOptions,
): Gauge<T> {
  return getOrCreate(
    registry,
    Gauge<T>,
    'gauge',
    config,
    (name) => new Gauge<T>({ ...config, name, registers: [registry] }),
    naming,
  );
}

/** A histogram whose series can be resolved once (`series()`): see `SeriesHistogram`. */
export function getOrCreateHistogram<T extends string = string>(
  registry: Registry,
  config: SeriesHistogramConfiguration<T>,
): SeriesHistogram<T> {
  return getOrCreate(registry, SeriesHistogram<T>, 'histogram', config, (name) => {
    return new SeriesHistogram<T>({ ...config, name }, registry);
  });
}

export function getOrCreateSummary<T extends string = string>(
  registry: Registry,
  config: Omit<SummaryConfiguration<T>, 'registers'>,
): Summary<T> {
  return getOrCreate(registry, Summary<T>, 'summary', config, (name) => {
    return new Summary<T>({ ...config, name, registers: [registry] });
  });
}
