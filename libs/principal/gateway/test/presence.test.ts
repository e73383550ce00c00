import { type Bus, connectNatsBus, type PresenceEvent, type PresenceRecord } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { AgentRouter } from '@pullplane/router';
import { freePort, type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { isTunnelError, type TunnelStream } from '@pullplane/tunnel';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanups, logger, rawAgent, startGateway } from './support.js';

// Presence across gateways on a real nats-server with JetStream: the store, not any clock,
// orders sessions, and routing tables drop records that expired without telling anyone.
let nats: NatsServerHandle;
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await nats?.stop();
});

let seq = 0;
/** A connection of its own (one per gateway or replica, as in a deployment) to a fresh bucket. */
async function buses(n: number, presenceTtlMs?: number): Promise<Bus[]> {
  const bucket = `presence-ft-${process.pid}-${++seq}`;
  const out: Bus[] = [];
  for (let i = 0; i < n; i++) {
    const bus = await connectNatsBus({
      servers: nats.url,
      name: `bus-${i}`,
      bucket,
      controlSubject: `ctl.${bucket}`,
      ...(presenceTtlMs ? { presenceTtlMs } : {}),
    });
    cleanups.push(() => bus.close());
    out.push(bus);
  }
  return out;
}

const HOUR = 3_600_000;

describe('presence ordered by the store', () => {
  it('two gateways with skewed clocks: the newest session wins, and the replaced one lets go', async () => {
    const [aheadBus, behindBus, reader] = await buses(3);
    // The gateway the agent leaves runs an hour ahead, the one it comes to an hour behind: by
    // their clocks the new session connected two hours before the old one.
    const ahead = await startGateway(aheadBus!, { now: () => Date.now() + HOUR });
    const behind = await startGateway(behindBus!, { now: () => Date.now() - HOUR });
    const old = await rawAgent(ahead.agentPort, 'agent-s');
    await expect.poll(async () => (await reader!.presence.get('agent-s'))?.gatewayId).toBe(ahead.gatewayId);
    const fresh = await rawAgent(behind.agentPort, 'agent-s');
    const freshSession = fresh.welcome?.kind.case === 'welcome' ? fresh.welcome.kind.value.sessionId : '';
    expect(freshSession).not.toBe('');
    // One of the two tunnels is let go: it must be the old one.
    const released = await Promise.race([old.ended.then(() => 'old'), fresh.ended.then(() => 'new')]);
    expect(released).toBe('old');
    expect(ahead.session('agent-s')).toBeUndefined();
    expect(behind.session('agent-s')?.sessionId).toBe(freshSession);
    const stored = await reader!.presence.get('agent-s');
    expect(stored).toMatchObject({ gatewayId: behind.gatewayId, sessionId: freshSession });
    // Its clock says so: it connected "earlier" than the session it replaced.
    expect(Date.parse(stored!.connectedAt)).toBeLessThan(Date.now() - HOUR / 2);
  });
});

/** The error a stream ended with (it is read to the end). */
function failureOf(s: TunnelStream): Promise<Error | undefined> {
  return new Promise((resolve) => {
    if (s.closed) return resolve(s.errored ?? undefined);
    s.on('close', () => resolve(s.errored ?? undefined));
    s.on('error', () => undefined);
    s.resume();
  });
}

describe('records that expire without an event', () => {
  async function deadRecord(writer: Bus, agent: string): Promise<PresenceRecord> {
    // A gateway that wrote its record and died (kill -9): nothing listens at its address.
    const record: PresenceRecord = {
      agent,
      gatewayId: 'gw-dead',
      internalAddress: `127.0.0.1:${await freePort()}`,
      sessionId: `s-${agent}`,
      connectedAt: new Date().toISOString(),
      lastHeartbeat: new Date().toISOString(),
      agentVersion: 't',
      protocolVersion: 2,
    };
    await writer.presence.put(record);
    return record;
  }

  async function router(bus: Bus, reconcileIntervalMs: number) {
    const registry = new Registry();
    const r = new AgentRouter({
      bus,
      logger,
      credentials: tunnelCredentials.insecure(),
      registry,
      reconcileIntervalMs,
    });
    await r.start();
    cleanups.push(() => r.stop());
    return { router: r, registry };
  }

  it('a TTL expiry with no delete event: the route leaves the table and agent listings', async () => {
    const [writer, proxyBus, watcher] = await buses(3, 1_500);
    const events: PresenceEvent[] = [];
    const stopWatch = await watcher!.presence.watch((e) => events.push(e));
    cleanups.push(stopWatch);
    const record = await deadRecord(writer!, 'agent-t');
    const { router: r, registry } = await router(proxyBus!, 250);
    await expect.poll(() => r.lookup('agent-t')?.sessionId, { timeout: 10_000 }).toBe(record.sessionId);
    // The record expires by the bucket's TTL: gone from the store (what `agent list` reads)...
    await expect
      .poll(() => writer!.presence.get('agent-t'), { timeout: 15_000, interval: 100 })
      .toBeUndefined();
    expect((await proxyBus!.presence.list()).map((x) => x.agent)).not.toContain('agent-t');
    // ...and from the routing table, though no watch reported it.
    await expect.poll(() => r.lookup('agent-t'), { timeout: 10_000 }).toBeUndefined();
    expect(r.agents().map((x) => x.agent)).not.toContain('agent-t');
    expect(events.filter((e) => e.type === 'delete')).toEqual([]);
    expect(await registry.getSingleMetricAsString('pullplane_router_stale_routes_dropped_total')).toMatch(
      /how="reconcile"} 1/,
    );
  });

  it('a holder whose record expired (renewals lost to an outage) writes it again; a removed one cannot', async () => {
    const [writer, other] = await buses(2, 1_500);
    const held = await deadRecord(writer!, 'agent-v');
    const revision = (await writer!.presence.get('agent-v'))!.revision!;
    await expect
      .poll(() => writer!.presence.get('agent-v'), { timeout: 15_000, interval: 100 })
      .toBeUndefined();
    const renewed = await writer!.presence.refresh(held, revision);
    expect(renewed).toEqual({ held: true, revision: expect.any(Number) });
    expect(await other!.presence.get('agent-v')).toMatchObject({ sessionId: held.sessionId });
    // Removed by its own session (the tunnel ended): a stale renewal does not bring it back.
    await writer!.presence.remove('agent-v', held.sessionId);
    expect(await writer!.presence.refresh(held, renewed.held ? renewed.revision : 0)).toEqual({
      held: false,
      current: undefined,
    });
    expect(await other!.presence.get('agent-v')).toBeUndefined();
  });

  it('a route that fails while the store has no record is dropped at once, and so are links to its gateway', async () => {
    const [writer, proxyBus] = await buses(2, 1_500);
    const record = await deadRecord(writer!, 'agent-u');
    // No periodic reconciliation: only the failed route can tell.
    const { router: r, registry } = await router(proxyBus!, 0);
    await expect.poll(() => r.lookup('agent-u')?.sessionId, { timeout: 10_000 }).toBe(record.sessionId);
    await expect
      .poll(() => writer!.presence.get('agent-u'), { timeout: 15_000, interval: 100 })
      .toBeUndefined();
    expect(r.lookup('agent-u')).toBeDefined();
    const err = await failureOf(
      r.open('agent-u', { head: { case: 'http', value: { method: 'GET', path: '/', headers: [] } } }),
    );
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_AGENT_NOT_FOUND');
    expect(r.lookup('agent-u')).toBeUndefined();
    expect(await registry.getSingleMetricAsString('pullplane_router_stale_routes_dropped_total')).toMatch(
      /how="route-failed"} 1/,
    );
    // The dead gateway's links were dialled for that request; no route names it now.
    expect(r.linksTo(record.internalAddress).length).toBeGreaterThan(0);
    await r.reconcile();
    expect(r.linksTo(record.internalAddress)).toEqual([]);
  });
});
