// The relay passes credit on only as far as an agent's share of the relay memory has room for it:
// a burst of large responses within a small share is slowed, not refused; another agent's streams
// on the same link keep their own share; a sender that goes beyond the credit it was given is
// still reset, that stream alone.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, credentials } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  batchFrame,
  dataFrame,
  decodeFrame,
  encodeFrame,
  type Frame,
  frame,
  GATEWAY_LINK_PATH,
  ResetCode,
  responseHeadFrame,
  windowUpdateFrame,
} from '@pullplane/proto';
import { AgentRouter } from '@pullplane/router';
import { dialRawAgent, startSlowHop } from '@pullplane/testing';
import { forEachFrame, type TunnelStream } from '@pullplane/tunnel';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../src/index.js';
import { cleanups, logger, metadataOf, startGateway } from './support.js';

const WINDOW = 256 * 1024;
const CHUNK = 64 * 1024;
const MiB = 1024 * 1024;

/** The body of `/big/<size>/<seed>`: bytes no other stream sends in the same order. */
function body(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 7 + (i >> 10)) & 0xff;
  return b;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A cluster API answering `/big/<size>/<seed>` as fast as the tunnel takes it, and uploads with their size. */
async function startBackend(): Promise<string> {
  const server = http.createServer((req, res) => {
    const big = /^\/big\/(\d+)\/(\d+)/.exec(req.url ?? '');
    if (big) {
      const all = body(Number(big[1]), Number(big[2]));
      let offset = 0;
      const pump = () => {
        while (offset < all.length) {
          const piece = all.subarray(offset, offset + 32 * 1024);
          offset += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
    });
    req.on('end', () => res.end(`${req.method} ${req.url} ${size}`));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startHonestAgent(name: string, g: Gateway, backendUrl: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: backendUrl, skipTLSVerify: true },
    { name: 'u', token: 'agent-token' },
  );
  const agent = new Agent({
    agentName: name,
    agentVersion: 'test',
    target: `127.0.0.1:${g.agentPort}`,
    credentials: tunnelCredentials.insecure(),
    metadata: () => metadataOf(name),
    heartbeatIntervalMs: 1000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: true,
    resourceProxyFilter: 'none',
    logger,
  });
  agent.start();
  cleanups.push(() => agent.stop());
  await expect.poll(() => g.session(name), { timeout: 10_000 }).toBeTruthy();
}

/** A proxy with one link to the gateway (through `via`, when given): every agent's streams share it. */
async function startRouter(bus: Bus, agents: string[], via?: string) {
  const router = new AgentRouter({
    bus,
    logger,
    credentials: tunnelCredentials.insecure(),
    registry: new Registry(),
    linksPerGateway: 1,
    reconcileIntervalMs: 3_600_000,
    metadata: () => metadataOf('proxy-a'),
  });
  await router.start();
  cleanups.push(() => router.stop());
  for (const a of agents) await expect.poll(() => router.lookup(a), { timeout: 10_000 }).toBeTruthy();
  if (via) {
    const table = (router as unknown as { table: { set(agent: string, record: unknown): void } }).table;
    for (const a of agents) table.set(a, { ...router.lookup(a)!, internalAddress: via });
  }
  return router;
}

/** An agent by hand, speaking protocol v2: it writes whole gRPC messages of the test's choosing. */
async function hostileAgent(g: Gateway, name: string) {
  const agent = await dialRawAgent({
    address: `127.0.0.1:${g.agentPort}`,
    credentials: credentials.createInsecure(),
    metadata: metadataOf(name),
    hello: { minProtocolVersion: 2, maxProtocolVersion: 2, agentName: name },
  });
  cleanups.push(agent.close);
  return { ...agent, write: (f: Frame) => agent.call.write(f) };
}

const get = (path: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
});

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const m = await registry.getSingleMetric(name)?.get();
  const match = m?.values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return match?.value ?? 0;
}

/** Reads a stream to its end: the digest of what came, or the error it failed with. */
async function digest(s: TunnelStream): Promise<string> {
  const hash = createHash('sha256');
  for await (const c of s) hash.update(c as Buffer);
  return hash.digest('hex');
}

/** Opens `n` concurrent GETs of `size` bytes each and checks every body byte for byte. */
async function burst(router: AgentRouter, agent: string, n: number, size: number): Promise<void> {
  const got = await Promise.all(
    Array.from({ length: n }, (_, i) => digest(router.open(agent, get(`/big/${size}/${i}`)))),
  );
  expect(got).toEqual(Array.from({ length: n }, (_, i) => sha(body(size, i))));
}

describe('relay credit: a burst is slowed to the agent’s share, never refused', () => {
  it('many concurrent large responses of one agent within a small share all complete byte for byte, the share never exceeded', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const share = 4 * MiB;
    const g = await startGateway(bus, {
      registry,
      maxChunkSize: CHUNK,
      initialWindow: WINDOW,
      agentLimits: { relayShareBytes: share },
    });
    await startHonestAgent('agent-burst', g, await startBackend());
    const router = await startRouter(bus, ['agent-burst'], await slowHop(g.internalAddress));
    const budget = g.session('agent-burst')!.relayBudget;

    // 12 readers that keep up (their windows grow to 4 MiB each) of 2 MiB each: 24 MiB through a
    // 4 MiB share, whose streams' initial windows (3 MiB) fit in it.
    await burst(router, 'agent-burst', 12, 2 * MiB);

    expect(await metricValue(registry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);
    // What the relay committed (credit passed on and bytes queued) and what it queued stayed
    // within the share; the share held back credit on the way.
    expect(budget.peakOutstanding).toBeLessThanOrEqual(share);
    expect(budget.peakOutstanding).toBeGreaterThan(0);
    expect(budget.peakReserved).toBeLessThanOrEqual(share);
    // Everything given back once the streams are done.
    await expect.poll(() => budget.reserved).toBe(0);
    expect(budget.outstanding).toBe(0);
    expect(g.relayBudget.reserved).toBe(0);
  });

  it('another agent’s streams on the same link keep their own share while one agent’s share is full', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const share = 2 * MiB;
    const g = await startGateway(bus, {
      registry,
      maxChunkSize: CHUNK,
      initialWindow: WINDOW,
      relayBudgetBytes: 2 * share,
      agentLimits: { relayShareBytes: share },
    });
    await startHonestAgent('agent-busy', g, await startBackend());
    const sink = await hostileAgent(g, 'agent-sink');
    const router = await startRouter(bus, ['agent-busy', 'agent-sink']);

    // An upload to an agent that grants a gigabyte of credit and then reads nothing: the relay
    // passes on only what the sink's share has room for, and the upload stalls there.
    const upload = router.open('agent-sink', {
      head: { case: 'http', value: { method: 'PUT', path: '/upload', headers: [] } },
      hasBody: true,
    });
    const [o] = await sink.opensArrived(1);
    sink.write(windowUpdateFrame(o!.streamId, 1024 * MiB));
    sink.call.pause();
    const chunk = Buffer.alloc(CHUNK, 0x55);
    const pump = () => {
      if (upload.destroyed) return;
      if (upload.write(chunk)) setImmediate(pump);
      else upload.once('drain', pump);
    };
    pump();
    const sinkBudget = g.session('agent-sink')!.relayBudget;
    // The upload has spent what it was given: its bytes wait for the sink, which reads nothing.
    await expect.poll(() => sinkBudget.outstanding, { timeout: 10_000 }).toBeGreaterThan(share - 2 * WINDOW);

    // The other agent's burst over the same link: all of it, byte for byte, within its own share.
    await burst(router, 'agent-busy', 6, 2 * MiB);
    const busyBudget = g.session('agent-busy')!.relayBudget;
    expect(busyBudget.peakOutstanding).toBeLessThanOrEqual(share);
    expect(busyBudget.peakReserved).toBeLessThanOrEqual(share);

    // The stalled upload was slowed, not refused: still open, and the sink's share never exceeded.
    expect(upload.destroyed).toBe(false);
    expect(sinkBudget.peakOutstanding).toBeLessThanOrEqual(share);
    expect(sinkBudget.peakReserved).toBeLessThanOrEqual(share);
    expect(await metricValue(registry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);
    expect(router.linksTo(g.internalAddress)).toHaveLength(1);

    // When the sink goes away, so does what was committed for it.
    sink.call.cancel();
    await sink.ended;
    await expect.poll(() => g.relayBudget.reserved).toBe(0);
    expect(g.relayBudget.outstanding).toBe(0);
    upload.destroy();
  });

  it('a sender going beyond the credit the relay gave it (not what its peer granted) is reset, that stream alone', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const share = 1 * MiB;
    const g = await startGateway(bus, {
      registry,
      maxChunkSize: CHUNK,
      initialWindow: WINDOW,
      agentLimits: { relayShareBytes: share },
    });
    const evil = await hostileAgent(g, 'agent-over');

    // A proxy link by hand: it opens a GET and grants 4 MiB of credit at once.
    const client = new Client(g.internalAddress, credentials.createInsecure());
    const link = client.makeBidiStreamRequest<Frame, Frame>(
      GATEWAY_LINK_PATH,
      encodeFrame,
      decodeFrame,
      metadataOf('proxy-a'),
    );
    link.on('error', () => undefined);
    cleanups.push(() => {
      link.cancel();
      client.close();
    });
    const received: Frame[] = [];
    link.on('data', (f: Frame) => forEachFrame(f, (inner) => received.push(inner)));
    const openOn = (streamId: number) =>
      link.write(frame({ case: 'open', value: { streamId, agent: 'agent-over', ...get('/x') } }));
    openOn(1);
    link.write(windowUpdateFrame(1, 4 * MiB));

    const [o] = await evil.opensArrived(1);
    const id = o!.streamId;
    const passed = () =>
      evil.frames
        .flatMap((f) => (f.kind.case === 'batch' ? f.kind.value.frames : [f]))
        .reduce(
          (sum, f) =>
            sum +
            (f.kind.case === 'windowUpdate' && f.kind.value.streamId === id ? f.kind.value.increment : 0),
          0,
        );
    await expect.poll(passed).toBeGreaterThan(0);
    // The relay passed on what the share had room for besides the stream's own window, no more.
    const given = passed();
    expect(given).toBeLessThanOrEqual(share - WINDOW);

    // The agent sends everything it was given and a chunk more, in one message (so no credit the
    // relay passes on meanwhile can cover it): within what the proxy granted, beyond what it got.
    const overrun = [responseHeadFrame(id, 200, [])];
    for (let sent = 0; sent < WINDOW + given + CHUNK; sent += CHUNK)
      overrun.push(dataFrame(id, Buffer.alloc(CHUNK, 1)));
    evil.write(batchFrame(overrun));
    await expect.poll(() => received.find((f) => f.kind.case === 'reset')).toBeTruthy();
    const reset = received.find((f) => f.kind.case === 'reset');
    expect(reset?.kind.case === 'reset' && reset.kind.value.streamId).toBe(1);
    expect(reset?.kind.case === 'reset' && reset.kind.value.code).toBe(ResetCode.FLOW_CONTROL);
    expect(
      await metricValue(registry, 'pullplane_gateway_agent_violations_total', {
        agent: 'agent-over',
        kind: 'flow-control',
      }),
    ).toBe(1);
    expect(await metricValue(registry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);

    // The link and the tunnel carry on: the next stream on both is answered.
    openOn(3);
    const [, again] = await evil.opensArrived(2);
    const answer = responseHeadFrame(again!.streamId, 200, []);
    if (answer.kind.case === 'responseHead') {
      answer.kind.value.body = Buffer.from('fine');
      answer.kind.value.endStream = true;
    }
    evil.write(answer);
    await expect
      .poll(() =>
        received.find(
          (f) => f.kind.case === 'responseHead' && f.kind.value.streamId === 3 && f.kind.value.endStream,
        ),
      )
      .toBeTruthy();
    expect(g.session('agent-over')).toBeDefined();
    await expect.poll(() => g.relayBudget.reserved).toBe(0);
  });
});

/** A hop to the gateway passing its bytes back at most 64 KiB a millisecond, closed after the test. */
async function slowHop(target: string): Promise<string> {
  const hop = await startSlowHop(target);
  cleanups.push(hop.close);
  return hop.address;
}
