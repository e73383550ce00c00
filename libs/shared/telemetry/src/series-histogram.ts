import type { LabelValues, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';
import { MetricUsageError } from './errors.js';

/** One labelled series of a histogram, resolved once: an observation is a bucket search and two additions. */
export interface HistogramSeries {
  observe(value: number): void;
}

export interface SeriesHistogramConfiguration<T extends string> {
  name: string;
  help: string;
  labelNames?: readonly T[];
  /** Upper bounds, ascending; `+Inf` is implied. prom-client's default when omitted. */
  buckets?: readonly number[];
}

const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

class Series implements HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot is past every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: LabelValues<string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value))
      throw new MetricUsageError(`a histogram observes finite numbers, not ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

/**
 * A Prometheus histogram registered in a prom-client registry and rendered as prom-client
 * renders its own (same series, same text), whose series are resolved once (`series()`):
 * prom-client's `observe` builds a closure, hashes and checks the labels on every call, which
 * the proxies paid on every request. `observe(labels, value)` resolves the series each time,
 * for the places where that does not matter.
 */
export class SeriesHistogram<T extends string = string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly T[];
  readonly upperBounds: readonly number[];
  private readonly bySeries = new Map<string, Series>();

  constructor(config: SeriesHistogramConfiguration<T>, registry: Registry) {
    if (!METRIC_NAME.test(config.name))
      throw new MetricUsageError(`invalid metric name ${JSON.stringify(config.name)}`);
    if (!config.help) throw new MetricUsageError(`metric ${config.name} needs a help text`);
    const labelNames = [...(config.labelNames ?? [])];
    for (const l of labelNames)
      if (!LABEL_NAME.test(l) || l === 'le')
        throw new MetricUsageError(`invalid label name ${JSON.stringify(l)} on ${config.name}`);
    const bounds = [...(config.buckets ?? DEFAULT_BUCKETS)];
    for (let i = 1; i < bounds.length; i++)
      if (!((bounds[i] as number) > (bounds[i - 1] as number)))
        throw new MetricUsageError(`buckets of ${config.name} must ascend`);
    this.name = config.name;
    this.help = config.help;
    this.labelNames = labelNames;
    this.upperBounds = bounds;
    // A histogram without labels has its one series from the start, as prom-client's has.
    if (labelNames.length === 0) this.series({});
    registry.registerMetric(this as never);
  }

  /** The series for `labels` (every label name this histogram has; a missing one is ''). */
  series(labels: LabelValues<T>): HistogramSeries {
    const key = this.keyOf(labels);
    let s = this.bySeries.get(key);
    if (s === undefined) {
      const own: LabelValues<string> = {};
      for (const name of Object.keys(labels)) {
        if (!this.labelNames.includes(name as T))
          throw new MetricUsageError(
            `label "${name}" is not one of ${this.name}'s labels [${this.labelNames.join(', ')}]`,
          );
        own[name] = labels[name as T] as string | number;
      }
      s = new Series(own, this.upperBounds);
      this.bySeries.set(key, s);
    }
    return s;
  }

  observe(labels: LabelValues<T>, value: number): void;
  observe(value: number): void;
  observe(labelsOrValue: LabelValues<T> | number, value?: number): void {
    if (typeof labelsOrValue === 'number') this.series({}).observe(labelsOrValue);
    else this.series(labelsOrValue).observe(value as number);
  }

  reset(): void {
    this.bySeries.clear();
    if (this.labelNames.length === 0) this.series({});
  }

  /** What the registry renders (prom-client's own histogram's shape: `le` first, then the series' labels). */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const values: Array<
      MetricValueWithName<string> & { sharedLabels: LabelValues<string>; exemplar?: null }
    > = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.bySeries.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        cumulative += s.counts[i] as number;
        const le = this.upperBounds[i] as number;
        values.push({
          labels: { le },
          sharedLabels: s.labels,
          value: cumulative,
          metricName: bucket,
          exemplar: null,
        });
      }
      values.push({
        labels: { le: '+Inf' },
        sharedLabels: s.labels,
        value: s.count,
        metricName: bucket,
        exemplar: null,
      });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    } as never;
  }

  /** The same with each value's labels whole (the registry's JSON and cluster aggregation read this). */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const data = await this.getForPromString();
    data.values = data.values.map((v) => {
      const { sharedLabels, labels, ...rest } = v as typeof v & { sharedLabels: LabelValues<string> };
      return { ...rest, labels: { ...labels, ...sharedLabels } };
    });
    return data;
  }

  private keyOf(labels: LabelValues<T>): string {
    if (this.labelNames.length === 0) return '';
    if (this.labelNames.length === 1) return String(labels[this.labelNames[0] as T] ?? '');
    let key = '';
    for (const name of this.labelNames) key += `${labels[name] ?? ''}\u0000`;
    return key;
  }
}
