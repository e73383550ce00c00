import type { Counter } from 'prom-client';
import { type CounterSeries, counterSeries } from './counter-series.js';

/** The `agent_name` value for agents this replica does not know (made-up names stay one series). */
export const UNKNOWN_AGENT_LABEL = '_unknown';

/**
 * Pre-resolved series of a counter labelled by `agent_name` (and optionally one more label), so
 * the hot path does two map lookups and one addition (`counterSeries`). Names the caller cannot
 * vouch for (`isKnown` false: never connected anywhere) share the `_unknown` series, which keeps the
 * cardinality bounded by the number of real agents whatever a client sends.
 */
export class AgentCounterChildren<Extra extends string = never> {
  private readonly byAgent = new Map<string, CounterSeries | Map<string, CounterSeries>>();

  constructor(
    private readonly counter: Counter<'agent_name' | Extra>,
    private readonly extraLabel?: Extra,
    private readonly isKnown: (agent: string) => boolean = () => true,
  ) {}

  /** Counts one event for `agent` (with `extra` as the second label's value, when there is one). */
  inc(agent: string, extra?: string): void {
    const name = this.isKnown(agent) ? agent : UNKNOWN_AGENT_LABEL;
    if (this.extraLabel === undefined) {
      let child = this.byAgent.get(name) as CounterSeries | undefined;
      if (!child) {
        child = counterSeries(this.counter, { agent_name: name } as Record<'agent_name' | Extra, string>);
        this.byAgent.set(name, child);
      }
      child.inc();
      return;
    }
    let inner = this.byAgent.get(name) as Map<string, CounterSeries> | undefined;
    if (!inner) {
      inner = new Map();
      this.byAgent.set(name, inner);
    }
    const value = extra ?? '';
    let child = inner.get(value);
    if (!child) {
      child = counterSeries(this.counter, { agent_name: name, [this.extraLabel]: value } as Record<
        'agent_name' | Extra,
        string
      >);
      inner.set(value, child);
    }
    child.inc();
  }
}
