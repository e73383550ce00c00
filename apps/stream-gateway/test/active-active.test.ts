import { rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import type { Agent } from '@pullplane/agent-core';
import {
  type NatsServerHandle,
  startNatsServer,
  startTcpBalancer,
  type TcpBalancer,
  waitFor,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  get,
  makePki,
  spawnGateway,
  startAgent,
  startBackend,
  startRouter,
  type TestPki,
} from './support.js';

// Two gateway processes, one real nats-server, three agents behind a TCP balancer standing in
// for the gateway Service, and proxy-side routers that hold no agent themselves.
let nats: NatsServerHandle;
let pki: TestPki;
let gateways: GatewayProcess[] = [];
let balancer: TcpBalancer;
const agents = new Map<string, Agent>();
const backends: Array<{ close(): void }> = [];
let routers: Array<Awaited<ReturnType<typeof startRouter>>> = [];
const names = ['agent-a', 'agent-b', 'agent-c'];

const gatewayOf = (name: string) => agents.get(name)?.connector.session?.gatewayId;

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gateways = await Promise.all([spawnGateway(pki, nats.url), spawnGateway(pki, nats.url)]);
  balancer = await startTcpBalancer(gateways.map((g) => g.agentAddress));
  for (const name of names) {
    const backend = await startBackend(name);
    backends.push(backend);
    agents.set(name, await startAgent(name, balancer.address, pki, backend.url));
  }
  routers = [await startRouter(nats.url, pki), await startRouter(nats.url, pki)];
  // Presence is written when the gateway accepts the tunnel, which can reach the routers before
  // the agent has read its Welcome: the tests read where each agent is from the agent's side, so
  // both must be in.
  await waitFor(
    () => names.every((n) => gatewayOf(n) !== undefined && routers.every((r) => r.router.lookup(n))),
    30_000,
  );
}, 60_000);

afterAll(async () => {
  for (const r of routers) await r.close();
  await Promise.all([...agents.values()].map((a) => a.stop()));
  for (const b of backends) b.close();
  await balancer?.close();
  for (const g of gateways) g.child.kill('SIGKILL');
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

async function ask(name: string, path = '/version', router = routers[0]!.router): Promise<string> {
  const s = router.open(name, get(path));
  const head = await s.responseHead();
  expect(head.status).toBe(200);
  return text(s);
}

describe('active-active gateways sharing presence over NATS', () => {
  it('routes each request to the right agent whichever gateway holds it', async () => {
    // The balancer spread the agents: both gateways hold at least one.
    expect(new Set(names.map(gatewayOf)).size).toBe(2);
    for (const router of routers) {
      for (const name of names)
        expect(await ask(name, '/version', router.router)).toBe(`agent:${name} GET /version`);
    }
    expect(() => routers[0]!.router.open('agent-z', get('/'))).toThrow(/Agent is not connected: agent-z/);
  });

  it('serves other requests to the same agent while a reader is paused', async () => {
    const watch = routers[0]!.router.open('agent-a', get('/stream'));
    await watch.responseHead();
    watch.pause();
    // Data piling up unread shows the pause is in effect before the other requests go out.
    await expect.poll(() => watch.readableLength, { timeout: 10_000 }).toBeGreaterThan(0);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ask('agent-a', `/quick/${i}`)));
    for (const [i, r] of results.entries()) expect(r).toBe(`agent:agent-a GET /quick/${i}`);
    // All of them answered while the paused stream was still open and unread.
    expect(watch.destroyed).toBe(false);
    expect(watch.isPaused()).toBe(true);
    watch.destroy();
  });

  it('shows every replica an agent that moved to another gateway', async () => {
    const agent = agents.get('agent-b')!;
    const before = gatewayOf('agent-b');
    // Force a reconnect until the balancer lands the agent on the other gateway.
    const moved = new Promise<number>((resolve) => {
      const onConnected = (w: { gatewayId: string }) => {
        if (w.gatewayId !== before) {
          agent.connector.off('connected', onConnected);
          resolve(Date.now());
        }
      };
      agent.connector.on('connected', onConnected);
    });
    await agent.stop();
    agent.start();
    await Promise.race([
      moved,
      (async () => {
        // Round-robin may hand the same gateway back; bounce again until it moves.
        for (let i = 0; i < 5; i++) {
          await new Promise((r) => setTimeout(r, 1_500)); // wait-ok: paces reconnect attempts, asserts nothing
          if (gatewayOf('agent-b') !== before) break;
          await agent.stop();
          agent.start();
        }
        return moved;
      })(),
    ]);
    const after = gatewayOf('agent-b');
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    await expect
      .poll(() => routers.every((r) => r.router.lookup('agent-b')?.gatewayId === after), {
        timeout: 15_000,
        interval: 10,
      })
      .toBe(true);
    expect(await ask('agent-b')).toBe('agent:agent-b GET /version');
  });

  it('keeps requests flowing while NATS is down, and presence catches up when it returns', async () => {
    await nats.kill('SIGKILL');
    // Lose NATS's store too: the bucket must be recreated and repopulated by the gateways.
    rmSync(nats.storeDir, { recursive: true, force: true });
    for (let round = 0; round < 5; round++) {
      for (const name of names) expect(await ask(name)).toBe(`agent:${name} GET /version`);
    }
    await nats.restart();
    const fresh = await startRouter(nats.url, pki);
    try {
      await expect.poll(() => names.every((n) => fresh.router.lookup(n)), { timeout: 15_000 }).toBe(true);
      for (const name of names)
        expect(await ask(name, '/version', fresh.router)).toBe(`agent:${name} GET /version`);
    } finally {
      await fresh.close();
    }
  }, 60_000);

  it('moves agents to the surviving gateway after a kill -9, failing in-flight requests rather than hanging', async () => {
    const victim = gateways.find((g) => names.some((n) => gatewayOf(n) === g.gatewayId))!;
    const victimId = victim.gatewayId;
    const held = names.filter((n) => gatewayOf(n) === victimId);
    expect(held.length).toBeGreaterThan(0);
    const inflight = held.map((n) => routers[0]!.router.open(n, get('/slow')));
    await Promise.all(inflight.map((s) => s.responseHead()));
    const outcomes = inflight.map(
      (s) =>
        new Promise<{ error: string }>((resolve) => {
          s.on('data', () => undefined);
          s.on('close', () => resolve({ error: String(s.errored?.message) }));
        }),
    );
    victim.child.kill('SIGKILL');
    // /slow never ends on its own: each in-flight request closes only because it was failed.
    for (const o of await Promise.all(outcomes)) expect(o.error).toMatch(/gateway|disconnected|unavailable/i);
    await expect
      .poll(() => held.every((n) => gatewayOf(n) !== undefined && gatewayOf(n) !== victimId), {
        timeout: 20_000,
        interval: 50,
      })
      .toBe(true);
    for (const name of names) {
      await expect
        .poll(() => ask(name).catch((e: Error) => e.message), { timeout: 3_000 })
        .toBe(`agent:${name} GET /version`);
    }
  }, 60_000);
});
