import { type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type ControlEvent,
  connectNatsBus,
  createMemoryBus,
  type PresenceEvent,
  type PresenceRecord,
} from '../src/index.js';

const record = (agent: string, sessionId: string, gatewayId = 'gw-1'): PresenceRecord => ({
  agent,
  gatewayId,
  internalAddress: '10.0.0.1:8444',
  sessionId,
  connectedAt: new Date().toISOString(),
  lastHeartbeat: new Date().toISOString(),
  agentVersion: '1.2.3',
  protocolVersion: 1,
});

let nats: NatsServerHandle;
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await nats?.stop();
});

let bucketSeq = 0;
const factories: Array<[string, () => Promise<{ a: Bus; b: Bus }>]> = [
  [
    'memory',
    async () => {
      const bus = createMemoryBus();
      return { a: bus, b: bus };
    },
  ],
  [
    'nats',
    async () => {
      const bucket = `presence-test-${process.pid}-${++bucketSeq}`;
      const a = await connectNatsBus({
        servers: nats.url,
        name: 'a',
        bucket,
        controlSubject: `ctl.${bucket}`,
      });
      const b = await connectNatsBus({
        servers: nats.url,
        name: 'b',
        bucket,
        controlSubject: `ctl.${bucket}`,
      });
      return { a, b };
    },
  ],
];

describe.each(factories)('%s bus', (_kind, factory) => {
  it('stores, lists and watches presence across connections', async () => {
    const { a, b } = await factory();
    await a.presence.put(record('agent-a', 's1'));
    const events: PresenceEvent[] = [];
    const stop = await b.presence.watch((e) => events.push(e));
    // The watch replays what exists before reporting changes.
    expect(events).toEqual([
      { type: 'put', record: expect.objectContaining({ agent: 'agent-a', sessionId: 's1' }) },
    ]);
    await a.presence.put(record('agent-b', 's2', 'gw-2'));
    await expect.poll(() => events.length, { timeout: 1_000 }).toBe(2);
    expect(await b.presence.get('agent-b')).toMatchObject({ gatewayId: 'gw-2' });
    expect((await b.presence.list()).map((r) => r.agent).sort()).toEqual(['agent-a', 'agent-b']);
    stop();
    await a.close();
    if (b !== a) await b.close();
  });

  it('removes a record only for the session that owns it', async () => {
    const { a, b } = await factory();
    await a.presence.put(record('agent-c', 'old'));
    await a.presence.put(record('agent-c', 'new'));
    const events: PresenceEvent[] = [];
    const stop = await b.presence.watch((e) => events.push(e));
    await a.presence.remove('agent-c', 'old');
    expect(await b.presence.get('agent-c')).toMatchObject({ sessionId: 'new' });
    await a.presence.remove('agent-c', 'new');
    expect(await b.presence.get('agent-c')).toBeUndefined();
    await expect.poll(() => events.at(-1), { timeout: 1_000 }).toEqual({ type: 'delete', agent: 'agent-c' });
    stop();
    await a.close();
    if (b !== a) await b.close();
  });

  it('orders sessions by revision: a replaced session can neither overwrite its successor nor write its record back', async () => {
    const { a, b } = await factory();
    const first = record('agent-r', 'first', 'gw-1');
    const r1 = await a.presence.put(first);
    expect(await a.presence.refresh(first, r1)).toEqual({ held: true, revision: expect.any(Number) });
    const renewed = (await a.presence.get('agent-r'))!.revision!;
    expect(renewed).toBeGreaterThan(r1);
    // Another gateway claims the agent for a newer session, whatever the clocks say.
    const second = { ...record('agent-r', 'second', 'gw-2'), connectedAt: new Date(0).toISOString() };
    const r2 = await b.presence.put(second);
    expect(r2).toBeGreaterThan(renewed);
    expect(await a.presence.refresh(first, renewed)).toEqual({
      held: false,
      current: expect.objectContaining({ sessionId: 'second', revision: r2 }),
    });
    await b.presence.remove('agent-r', 'second');
    expect(await a.presence.refresh(first, renewed)).toEqual({ held: false, current: undefined });
    expect(await b.presence.get('agent-r')).toBeUndefined();
    await a.close();
    if (b !== a) await b.close();
  });

  it('delivers control events to every subscriber', async () => {
    const { a, b } = await factory();
    const got: ControlEvent[] = [];
    const also: ControlEvent[] = [];
    const local: ControlEvent[] = [];
    const unsubs = [
      b.control.subscribe((e) => got.push(e)),
      b.control.subscribe((e) => also.push(e)),
      a.control.subscribe((e) => local.push(e)),
    ];
    // Core NATS drops what is published before a subscription reaches the server: publish
    // probes until every subscriber has one, then the event itself.
    const probe: ControlEvent = { type: 'agent-kicked', agent: 'probe', reason: 'probe' };
    await expect
      .poll(
        async () => {
          await a.control.publish(probe);
          return [got, also, local].every((l) => l.length > 0);
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBe(true);
    const event: ControlEvent = { type: 'agent-kicked', agent: 'agent-a', reason: 'admin' };
    await a.control.publish(event);
    for (const list of [got, also, local]) {
      await expect.poll(() => list.at(-1), { timeout: 10_000 }).toEqual(event);
      expect(list.filter((e) => !(e.type === 'agent-kicked' && e.agent === 'probe'))).toEqual([event]);
    }
    for (const unsub of unsubs) unsub();
    await a.close();
    if (b !== a) await b.close();
  });

  it('keeps revocations durably and replays them to new watchers', async () => {
    const { a, b } = await factory();
    await a.revocations.add({
      kind: 'agent',
      agent: 'agent-r',
      reason: 'compromised',
      at: new Date().toISOString(),
    });
    await a.revocations.add({
      kind: 'agent',
      agent: 'agent-r',
      reason: 'compromised again',
      at: new Date().toISOString(),
    });
    const seen: string[] = [];
    const stop = await b.revocations.watch((r) => seen.push(r.kind === 'agent' ? r.agent : r.jti));
    expect(seen).toContain('agent-r');
    await a.revocations.add({ kind: 'token', jti: 'tok-1', reason: 'leaked', at: new Date().toISOString() });
    await expect.poll(() => seen.includes('tok-1'), { timeout: 1_000 }).toBe(true);
    expect((await b.revocations.list()).length).toBe(2);
    stop();
    await a.close();
    if (b !== a) await b.close();
  });

  it('refuses agent names that are not DNS labels', async () => {
    const { a } = await factory();
    await expect(a.presence.put(record('../evil', 's'))).rejects.toThrow(/DNS label/);
    await expect(a.presence.put(record('Agent.A', 's'))).rejects.toThrow(/DNS label/);
    expect(await a.presence.list()).toEqual([]);
    await a.close();
  });
});

describe('nats bus across a NATS outage', () => {
  it('reports the outage, keeps watching, and catches up when NATS returns', async () => {
    const own = await startNatsServer();
    const a = await connectNatsBus({ servers: own.url, name: 'a' });
    const b = await connectNatsBus({ servers: own.url, name: 'b' });
    const seen = new Map<string, string>();
    await b.presence.watch((e) => {
      if (e.type === 'put') seen.set(e.record.agent, e.record.sessionId);
      else seen.delete(e.agent);
    });
    await a.presence.put(record('agent-x', 's1'));
    await expect.poll(() => seen.get('agent-x'), { timeout: 1_000 }).toBe('s1');
    const statuses: string[] = [];
    a.onStatus((s) => statuses.push(s));

    await own.stop();
    await expect.poll(() => a.status, { timeout: 10_000 }).toBe('disconnected');
    await expect(a.presence.put(record('agent-x', 's2'))).rejects.toThrow();
    // What b knew survives the outage.
    expect(seen.get('agent-x')).toBe('s1');

    await own.restart();
    await expect.poll(() => a.status, { timeout: 15_000 }).toBe('connected');
    await expect
      .poll(
        async () => {
          await a.presence.put(record('agent-x', 's3')).catch(() => undefined);
          return seen.get('agent-x');
        },
        { timeout: 15_000, interval: 250 },
      )
      .toBe('s3');
    expect(statuses).toEqual(['disconnected', 'connected']);
    await a.close();
    await b.close();
    await own.stop();
  });
});
