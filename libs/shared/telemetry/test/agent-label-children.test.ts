import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AgentCounterChildren, UNKNOWN_AGENT_LABEL } from '../src/index.js';

describe('AgentCounterChildren', () => {
  it('counts per agent and per second label, handing the counter one inc per series when scraped', async () => {
    const registry = new Registry();
    const counter = new Counter({
      name: 'x_total',
      help: 'x',
      labelNames: ['agent_name', 'reason'],
      registers: [registry],
    });
    let incs = 0;
    const inc = counter.inc.bind(counter);
    counter.inc = ((...args: Parameters<typeof inc>) => {
      incs++;
      return inc(...(args as [never]));
    }) as typeof counter.inc;
    const children = new AgentCounterChildren(counter, 'reason');
    for (let i = 0; i < 100; i++) children.inc('agent-a', 'timeout');
    children.inc('agent-b', 'timeout');
    children.inc('agent-a', 'agent_error');
    expect(incs).toBe(0);
    const values = (await counter.get()).values.map((v) => [v.labels.agent_name, v.labels.reason, v.value]);
    expect(values).toEqual([
      ['agent-a', 'timeout', 100],
      ['agent-b', 'timeout', 1],
      ['agent-a', 'agent_error', 1],
    ]);
    expect(incs).toBe(3);
  });

  it('counts names it cannot vouch for under one series, however many a client makes up', async () => {
    const registry = new Registry();
    const counter = new Counter({
      name: 'y_total',
      help: 'y',
      labelNames: ['agent_name'],
      registers: [registry],
    });
    const known = new Set(['agent-a']);
    const children = new AgentCounterChildren(counter, undefined, (a) => known.has(a));
    children.inc('agent-a');
    for (let i = 0; i < 1000; i++) children.inc(`made-up-${i}`);
    const values = (await counter.get()).values.map((v) => [v.labels.agent_name, v.value]);
    expect(values).toEqual([
      ['agent-a', 1],
      [UNKNOWN_AGENT_LABEL, 1000],
    ]);
  });
});
