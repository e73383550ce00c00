import type { Counter, LabelValues } from 'prom-client';
import { MetricUsageError } from './errors.js';

/** One labelled series of a counter, resolved once: counting on it is one addition. */
export interface CounterSeries {
  inc(value?: number): void;
}

interface Pending {
  readonly labels: LabelValues<string>;
  value: number;
}

type Collectable = { name: string; collect?: (this: unknown) => unknown; labelNames?: readonly string[] };

const pendingByCounter = new WeakMap<object, Pending[]>();

/**
 * A series of `counter` whose counts are kept as a plain number and handed to the counter when
 * it is collected (a scrape, `get()`): prom-client hashes and checks the labels on every `inc`,
 * children included, a few hundred ns each, several times a request. Labels are checked once,
 * here; the series appears at its first scrape after a count, as it would with `inc`.
 */
export function counterSeries<T extends string>(counter: Counter<T>, labels: LabelValues<T>): CounterSeries {
  const c = counter as unknown as Collectable;
  const known = c.labelNames ?? [];
  for (const name of Object.keys(labels))
    if (!known.includes(name))
      throw new MetricUsageError(`label "${name}" is not one of ${c.name}'s labels [${known.join(', ')}]`);
  let list = pendingByCounter.get(counter);
  if (list === undefined) {
    const own: Pending[] = [];
    list = own;
    pendingByCounter.set(counter, own);
    const before = c.collect;
    c.collect = function (this: unknown) {
      for (const p of own) {
        if (p.value === 0) continue;
        const value = p.value;
        p.value = 0;
        counter.inc(p.labels as LabelValues<T>, value);
      }
      return before?.call(this);
    };
  }
  const pending: Pending = { labels: { ...labels }, value: 0 };
  list.push(pending);
  return {
    inc(value = 1) {
      // What prom-client refuses, refused at the call as it would be, not at the next scrape.
      if (!(value >= 0) || value === Number.POSITIVE_INFINITY)
        throw new MetricUsageError(`a counter only goes up by a finite amount, not ${value}`);
      pending.value += value;
    },
  };
}
