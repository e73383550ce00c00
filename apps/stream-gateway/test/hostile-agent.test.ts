// A hostile agent against the real gateway process: a genuine agent certificate for its own name,
// and everything the tunnel protocol forbids. It may hurt its own streams and nothing else: the
// proxy links it shares with other agents keep running, and the gateway's memory stays within
// what the agent's share of the relay budget allows.
import { readFileSync, rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { credentials } from '@grpc/grpc-js';
import type { Agent } from '@pullplane/agent-core';
import { type Bus, connectNatsBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  batchFrame,
  dataFrame,
  encodeFrame,
  MAX_TUNNEL_MESSAGE_BYTES,
  responseHeadFrame,
  windowUpdateFrame,
} from '@pullplane/proto';
import { AgentRouter } from '@pullplane/router';
import { dialRawAgent, type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { isTunnelError, type TunnelStream } from '@pullplane/tunnel';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  get,
  makePki,
  metricValue,
  silent,
  spawnGateway,
  startAgent,
  startBackend,
  type TestPki,
} from './support.js';

const MiB = 1024 * 1024;
const SHARE = 4 * MiB;

let nats: NatsServerHandle;
let pki: TestPki;
let gateway: GatewayProcess;
let metricsPort: number;
let honest: Agent;
let backend: Awaited<ReturnType<typeof startBackend>>;
let bus: Bus;
let router: AgentRouter;
const routerRegistry = new Registry();
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gateway = await spawnGateway(pki, nats.url, [
    `--relay-budget=${3 * SHARE}`,
    `--relay-budget-per-agent=${SHARE}`,
    '--agent-max-violations=50',
  ]);
  const ops = gateway.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.metricsPort);
  metricsPort = Number(ops?.metricsPort);
  backend = await startBackend('agent-b');
  honest = await startAgent('agent-b', gateway.agentAddress, pki, backend.url);
  const { cert, key } = await pki.proxy('resource-proxy');
  bus = await connectNatsBus({ servers: nats.url, name: 'hostile-test-router' });
  router = new AgentRouter({
    bus,
    logger: silent,
    credentials: tunnelCredentials.tls(readFileSync(pki.ca), readFileSync(key), readFileSync(cert)),
    serverNameOverride: 'localhost',
    registry: routerRegistry,
    routeTimeoutMs: 5_000,
    // One link: every stream of every agent shares it, as under load.
    linksPerGateway: 1,
  });
  await router.start();
  const deadline = Date.now() + 10_000;
  while (!router.lookup('agent-b')) {
    if (Date.now() > deadline) throw new Error('agent-b never appeared in presence');
    await new Promise((r) => setTimeout(r, 25)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}, 60_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  router?.stop();
  await bus?.close();
  await honest?.stop();
  backend?.close();
  gateway?.child.kill('SIGKILL');
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

/** An agent by hand, with a real agent certificate: it writes whole gRPC messages of its choosing. */
async function hostileAgent(name: string) {
  const { cert, key } = await pki.agent(name);
  const agent = await dialRawAgent({
    address: gateway.agentAddress,
    credentials: credentials.createSsl(readFileSync(pki.ca), readFileSync(key), readFileSync(cert)),
    channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
    hello: { minProtocolVersion: 2, maxProtocolVersion: 2, agentName: name },
  });
  cleanups.push(agent.close);
  await expect.poll(() => router.lookup(name), { timeout: 10_000 }).toBeTruthy();
  return agent;
}

function outcome(s: TunnelStream): Promise<Error | undefined> {
  return new Promise((resolve) => {
    s.on('close', () => resolve(s.errored ?? undefined));
    s.resume();
  });
}

/** Reads a stream until `n` more bytes arrived. */
function readMore(s: TunnelStream, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const onData = (c: Buffer) => {
      got += c.length;
      if (got >= n) {
        s.off('data', onData);
        s.pause();
        resolve();
      }
    };
    s.on('data', onData);
    s.once('error', reject);
    s.resume();
  });
}

/** Writes `total` bytes into `s`, one chunk a turn, until done or the stream fails. */
function upload(s: TunnelStream, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 0x55);
  let left = total;
  const pump = () => {
    if (s.destroyed) return;
    if (left <= 0) return void s.end();
    left -= chunk.length;
    if (s.write(chunk)) setImmediate(pump);
    else s.once('drain', pump);
  };
  pump();
}

async function redials(): Promise<number> {
  const m = await routerRegistry.getSingleMetric('pullplane_router_gateway_link_redials_total')?.get();
  return m?.values[0]?.value ?? 0;
}

describe('a hostile agent with a genuine certificate, against the gateway process', () => {
  it('its batch of heads over the proxy limit costs its own stream; other agents’ streams on the same links keep flowing', async () => {
    const evil = await hostileAgent('agent-evil');
    // Streams that never end, to another agent, over the same links.
    const streams = Array.from({ length: 8 }, () => router.open('agent-b', get('/stream')));
    await Promise.all(streams.map((s) => readMore(s, 64 * 1024)));
    const linksBefore = router.linksTo(gateway.internalAddress);

    const count = 300;
    const victims = Array.from({ length: count }, (_, i) => router.open('agent-evil', get(`/x/${i}`)));
    const failures = victims.map(outcome);
    const opens = await evil.opensArrived(count);
    const build = (pad: number, fine: number) => {
      const first = responseHeadFrame(opens[0]!.streamId, 200, [{ name: 'x-fine', value: 'f'.repeat(fine) }]);
      if (first.kind.case === 'responseHead') first.kind.value.body = Buffer.alloc(256 * 1024, 0x61);
      return batchFrame([
        first,
        ...opens
          .slice(1)
          .map((o) => responseHeadFrame(o.streamId, 200, [{ name: 'x-pad', value: 'p'.repeat(pad) }])),
        dataFrame(opens[0]!.streamId, Buffer.from('!')),
      ]);
    };
    const target = MAX_TUNNEL_MESSAGE_BYTES - 8;
    let [pad, high] = [1024, 64 * 1024];
    while (high - pad > 1) {
      const mid = (pad + high) >> 1;
      if (encodeFrame(build(mid, 1)).byteLength <= target - 1024) pad = mid;
      else high = mid;
    }
    // One more header character is one more byte (short of a varint boundary, which the loop undoes).
    let fine = 1 + target - encodeFrame(build(pad, 1)).byteLength;
    while (encodeFrame(build(pad, fine)).byteLength > target) fine--;
    evil.call.write(build(pad, fine));

    const first = await failures[0];
    expect(isTunnelError(first) && first.code).toBe('TUNNEL_FLOW_CONTROL');
    for (const v of victims.slice(1)) expect((await v.responseHead()).status).toBe(200);
    // The other agent's streams still flow, over the links they had.
    await Promise.all(streams.map((s) => readMore(s, 256 * 1024)));
    expect(router.linksTo(gateway.internalAddress)).toEqual(linksBefore);
    expect(await redials()).toBe(0);
    expect(await metricValue(metricsPort, 'pullplane_gateway_agent_violations_total')).toBeGreaterThanOrEqual(
      1,
    );
    for (const s of [...streams, ...victims]) s.destroy();
  });

  it('an agent that grants credit and stops reading holds no more gateway memory than its share; others keep working', async () => {
    const evil = await hostileAgent('agent-sink');
    const baseline = await metricValue(metricsPort, 'nodejs_external_memory_bytes');
    const resetsBefore = await metricValue(metricsPort, 'pullplane_gateway_relay_budget_resets_total');
    // Six uploads; the agent grants each a gigabyte of credit, then never reads again.
    const uploads = Array.from({ length: 6 }, (_, i) =>
      router.open('agent-sink', {
        head: { case: 'http', value: { method: 'PUT', path: `/upload/${i}`, headers: [] } },
        hasBody: true,
      }),
    );
    const failures = uploads.map(outcome);
    const opens = await evil.opensArrived(6);
    evil.call.write(batchFrame(opens.map((o) => windowUpdateFrame(o.streamId, 1024 * MiB))));
    evil.call.pause();
    for (const u of uploads) upload(u, 64 * MiB);

    // The gateway passes the agent's credit on only as far as its share has room: the uploads
    // spend that and stall, their bytes queued for the stalled agent, within its share.
    await expect
      .poll(() => metricValue(metricsPort, 'pullplane_gateway_relay_buffered_bytes'), { timeout: 20_000 })
      .toBeGreaterThan(SHARE / 2);
    expect(await metricValue(metricsPort, 'pullplane_gateway_relay_buffered_bytes')).toBeLessThanOrEqual(
      SHARE,
    );

    // The process budget is not pinned: an upload to another agent through the same gateway passes.
    const other = router.open('agent-b', {
      head: { case: 'http', value: { method: 'PUT', path: '/other', headers: [] } },
      body: Buffer.alloc(6 * MiB, 2),
    });
    expect(await text(other)).toBe('agent:agent-b PUT /other');
    // By then, slowed and not refused: every upload to the stalled agent is still open, nothing
    // was reset for memory, and what the gateway holds for it stayed within its share.
    expect(uploads.map((u) => u.destroyed)).toEqual(Array(6).fill(false));
    expect(await metricValue(metricsPort, 'pullplane_gateway_relay_budget_resets_total')).toBe(resetsBefore);
    expect(await metricValue(metricsPort, 'pullplane_gateway_relay_buffered_bytes')).toBeLessThanOrEqual(
      SHARE,
    );
    // 384 MiB were offered to it; the margin is garbage not yet collected (decoded messages) and
    // the transports' own buffers.
    const grown = (await metricValue(metricsPort, 'nodejs_external_memory_bytes')) - baseline;
    expect(grown).toBeLessThan(SHARE + 24 * MiB);

    // When the stalled tunnel goes away, its uploads fail and what was queued for it is released.
    evil.call.cancel();
    for (const f of failures) expect(await f).toBeInstanceOf(Error);
    await expect
      .poll(() => metricValue(metricsPort, 'pullplane_gateway_relay_buffered_bytes'), { timeout: 20_000 })
      .toBe(0);
  });
});
