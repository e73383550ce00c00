import { rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import type { Agent } from '@pullplane/agent-core';
import {
  type NatsServerHandle,
  startNatsServer,
  startTcpBalancer,
  type TcpBalancer,
} from '@pullplane/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
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

let nats: NatsServerHandle;
let pki: TestPki;
let gateways: GatewayProcess[];
let balancer: TcpBalancer;
let agent: Agent;
let backend: { close(): void };
let routing: Awaited<ReturnType<typeof startRouter>>;

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gateways = await Promise.all([spawnGateway(pki, nats.url), spawnGateway(pki, nats.url)]);
  balancer = await startTcpBalancer(gateways.map((g) => g.agentAddress));
  const b = await startBackend('agent-d');
  backend = b;
  agent = await startAgent('agent-d', balancer.address, pki, b.url);
  routing = await startRouter(nats.url, pki);
  const deadline = Date.now() + 10_000;
  while (!routing.router.lookup('agent-d')) {
    if (Date.now() > deadline) throw new Error('agent-d never appeared in presence');
    await new Promise((r) => setTimeout(r, 25)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}, 60_000);

afterAll(async () => {
  await routing?.close();
  await agent?.stop();
  backend?.close();
  await balancer?.close();
  for (const g of gateways ?? []) g.child.kill('SIGKILL');
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

it('on SIGTERM tells agents to move, finishes in-flight streams, then exits 0', async () => {
  while (!agent.ready || !routing.router.lookup('agent-d')) await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  const holderId = agent.connector.session!.gatewayId;
  const holder = gateways.find((g) => g.gatewayId === holderId)!;
  const other = gateways.find((g) => g !== holder)!;
  // One second of ticks, in flight on the gateway about to stop.
  const inflight = routing.router.open('agent-d', get('/slow?n=10'));
  await inflight.responseHead();
  const body = text(inflight);
  let bodyDone = false;
  void body.then(() => {
    bodyDone = true;
  });
  holder.child.kill('SIGTERM');

  // The agent reconnects elsewhere (GoAway) while the old gateway is still draining:
  // the move comes before the in-flight stream ends, whatever the machine's speed.
  await expect
    .poll(() => agent.connector.session?.gatewayId, { timeout: 20_000, interval: 20 })
    .toBe(other.gatewayId);
  expect(bodyDone).toBe(false);
  // New requests already go to the other gateway while the old one drains.
  const fresh = routing.router.open('agent-d', get('/version'));
  expect(await text(fresh)).toBe('agent:agent-d GET /version');

  // The stream that was in flight completes in full.
  const lines = (await body).split('\n').filter(Boolean);
  expect(lines, lines.join('|')).toHaveLength(10);
  expect(await holder.exited).toBe(0);
  expect(holder.logs.some((l) => l.includes('"gateway draining"'))).toBe(true);
}, 30_000);
