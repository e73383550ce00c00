// An agent holding genuine credentials for its own name, doing everything the protocol forbids.
// Whatever it sends, the worst it may do is to its own streams: the proxy link it shares with
// other agents' streams never fails, and other agents' requests keep their memory.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { credentials } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  batchFrame,
  dataFrame,
  encodeFrame,
  type Frame,
  MAX_TUNNEL_MESSAGE_BYTES,
  responseHeadFrame,
  windowUpdateFrame,
} from '@pullplane/proto';
import { AgentRouter } from '@pullplane/router';
import { dialRawAgent } from '@pullplane/testing';
import { isTunnelError, type TunnelStream } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../src/index.js';
import { cleanups, logger, metadataOf, startGateway } from './support.js';

const WINDOW = 256 * 1024;

/** A cluster API whose /watch/* responses stay open and take more lines on demand. */
async function startBackend() {
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/watch')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED"}\n');
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
    });
    req.on('end', () => res.end(`${req.method} ${url} ${size}`));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    /** Writes one more event to every open watch. */
    push: (line: string) => {
      for (const res of held) res.write(`${line}\n`);
    },
  };
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

async function startRouter(bus: Bus, agents: string[]) {
  const registry = new Registry();
  const router = new AgentRouter({
    bus,
    logger,
    credentials: tunnelCredentials.insecure(),
    registry,
    linksPerGateway: 1,
    metadata: () => metadataOf('proxy-a'),
  });
  await router.start();
  cleanups.push(() => router.stop());
  for (const a of agents) await expect.poll(() => router.lookup(a), { timeout: 10_000 }).toBeTruthy();
  return { router, registry };
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

/** Resolves with the error a stream fails with (or undefined when it ends cleanly). */
function outcome(s: TunnelStream): Promise<Error | undefined> {
  return new Promise((resolve) => {
    s.on('close', () => resolve(s.errored ?? undefined));
    s.resume();
  });
}

/** Reads a stream until its text contains `expected`. */
function readUntil(s: TunnelStream, expected: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (c: Buffer) => {
      seen += c.toString();
      if (seen.includes(expected)) {
        s.off('data', onData);
        resolve();
      }
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

/** A whole response in one head: status 200, `body` inline, end of stream. */
function answer(streamId: number, body: string): Frame {
  const f = responseHeadFrame(streamId, 200, [{ name: 'content-type', value: 'text/plain' }]);
  if (f.kind.case === 'responseHead') {
    f.kind.value.body = Buffer.from(body);
    f.kind.value.endStream = true;
  }
  return f;
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const m = await registry.getSingleMetric(name)?.get();
  const match = m?.values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return match?.value ?? 0;
}

describe('a hostile agent costs only its own streams', () => {
  it('a batch of heads that would overflow the proxy link is split, and other agents’ watches keep running', async () => {
    const bus = createMemoryBus();
    const backend = await startBackend();
    const g = await startGateway(bus);
    await startHonestAgent('agent-b', g, backend.url);
    const evil = await hostileAgent(g, 'agent-evil');
    const { router, registry } = await startRouter(bus, ['agent-b', 'agent-evil']);

    const watches = Array.from({ length: 8 }, (_, i) => router.open('agent-b', get(`/watch/${i}`)));
    await Promise.all(watches.map((w) => readUntil(w, 'ADDED')));
    const [link] = router.linksTo(g.internalAddress);

    // 300 requests to the hostile agent share the link with the watches.
    const count = 300;
    const victims = Array.from({ length: count }, (_, i) => router.open('agent-evil', get(`/x/${i}`)));
    const outcomes = victims.map((v) => outcome(v));
    const opens = await evil.opensArrived(count);

    // One message just under the gateway's receive limit: a head with a window's worth of body
    // inline, heads with large (but permitted) headers for every other stream, and one byte over
    // the first stream's credit, which the gateway answers with a Reset of its own.
    const build = (headerChars: number, fine = 0) => {
      const frames: Frame[] = [];
      const first = responseHeadFrame(
        opens[0]!.streamId,
        200,
        fine > 0 ? [{ name: 'x-fine', value: 'f'.repeat(fine) }] : [],
      );
      if (first.kind.case === 'responseHead') first.kind.value.body = Buffer.alloc(WINDOW, 0x61);
      frames.push(first);
      for (const o of opens.slice(1))
        frames.push(responseHeadFrame(o.streamId, 200, [{ name: 'x-pad', value: 'p'.repeat(headerChars) }]));
      frames.push(dataFrame(opens[0]!.streamId, Buffer.from('!')));
      return batchFrame(frames);
    };
    // As close under the limit as a byte allows: bulk padding first, then one header to the byte.
    const target = MAX_TUNNEL_MESSAGE_BYTES - 8;
    let [low, high] = [1024, 64 * 1024];
    while (high - low > 1) {
      const mid = (low + high) >> 1;
      if (encodeFrame(build(mid)).byteLength <= target - 1024) low = mid;
      else high = mid;
    }
    // One more header character is one more byte (short of a varint boundary, which the loop undoes).
    let fine = 1 + target - encodeFrame(build(low, 1)).byteLength;
    while (encodeFrame(build(low, fine)).byteLength > target) fine--;
    const attack = build(low, fine);
    expect(encodeFrame(attack).byteLength).toBeGreaterThan(target - 4);
    expect(encodeFrame(attack).byteLength).toBeLessThanOrEqual(MAX_TUNNEL_MESSAGE_BYTES);
    evil.write(attack);

    // The overrunning stream is reset, and only it: the others got their (permitted) heads.
    const err = await outcomes[0];
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_FLOW_CONTROL');
    for (const v of victims.slice(1)) expect((await v.responseHead()).status).toBe(200);

    // The link under everything never failed: the watches of the other agent are still fed.
    backend.push('{"type":"MODIFIED","after":"attack"}');
    await Promise.all(watches.map((w) => readUntil(w, '"after":"attack"')));
    expect(router.linksTo(g.internalAddress)[0]).toBe(link);
    expect(await metricValue(registry, 'pullplane_router_gateway_link_redials_total')).toBe(0);
    for (const w of watches) expect(w.destroyed).toBe(false);
    for (const v of victims) v.destroy();
    for (const w of watches) w.destroy();
  });

  it('resets a head over the header limits, counts it against the agent, and serves the rest', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const g = await startGateway(bus, {
      registry,
      agentLimits: { head: { maxHeaders: 16, maxHeaderBytes: 4096 } },
    });
    const evil = await hostileAgent(g, 'agent-heads');
    const { router } = await startRouter(bus, ['agent-heads']);
    const many = router.open('agent-heads', get('/many'));
    const large = router.open('agent-heads', get('/large'));
    const fine = router.open('agent-heads', get('/fine'));
    const [o1, o2, o3] = await evil.opensArrived(3);
    const headers = Array.from({ length: 17 }, (_, i) => ({ name: `x-${i}`, value: 'v' }));
    evil.write(
      batchFrame([
        responseHeadFrame(o1!.streamId, 200, headers),
        responseHeadFrame(o2!.streamId, 200, [{ name: 'x-big', value: 'b'.repeat(4096) }]),
        answer(o3!.streamId, 'ok'),
      ]),
    );
    const [e1, e2] = await Promise.all([outcome(many), outcome(large)]);
    expect(isTunnelError(e1) && e1.code).toBe('TUNNEL_PROTOCOL');
    expect(e1?.message).toMatch(/17 headers \(the limit is 16\)/);
    expect(isTunnelError(e2) && e2.code).toBe('TUNNEL_PROTOCOL');
    expect(e2?.message).toMatch(/bytes of headers \(the limit is 4096\)/);
    expect(await text(fine)).toBe('ok');
    expect(
      await metricValue(registry, 'pullplane_gateway_agent_violations_total', {
        agent: 'agent-heads',
        kind: 'oversized-frame',
      }),
    ).toBe(2);
    // The agent was told too: a Reset for each of its two streams came back.
    expect(g.session('agent-heads')?.closed).toBe(false);
  });

  it('counts frames for streams never opened, not frames for streams that just ended', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const g = await startGateway(bus, { registry });
    const evil = await hostileAgent(g, 'agent-ids');
    const { router } = await startRouter(bus, ['agent-ids']);
    const s = router.open('agent-ids', get('/once'));
    const [o] = await evil.opensArrived(1);
    evil.write(answer(o!.streamId, 'done'));
    expect(await text(s)).toBe('done');
    // A late frame for the stream that just ended: a race any peer may lose, not a violation.
    evil.write(windowUpdateFrame(o!.streamId, 1024));
    // A frame for an id the gateway never opened: a violation. It arrives after the late one, on
    // the same ordered tunnel, so once it is counted the late one has been judged too.
    evil.write(dataFrame(o!.streamId + 2 * 1000, Buffer.from('?')));
    const labels = { agent: 'agent-ids', kind: 'unknown-stream' };
    await expect
      .poll(() => metricValue(registry, 'pullplane_gateway_agent_violations_total', labels))
      .toBe(1);
    expect(await metricValue(registry, 'pullplane_gateway_agent_violations_total', labels)).toBe(1);
  });

  it('closes the tunnel of an agent that keeps breaking the protocol, with a security event', async () => {
    const bus = createMemoryBus();
    const registry = new Registry();
    const lines: Array<Record<string, unknown>> = [];
    const capture = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          cb();
        },
      }),
    );
    const g = await startGateway(bus, { registry, logger: capture, agentLimits: { maxViolations: 2 } });
    const evil = await hostileAgent(g, 'agent-repeat');
    await expect.poll(() => g.session('agent-repeat')).toBeTruthy();
    // Three frames for streams never opened.
    for (const id of [1001, 1003, 1005]) evil.write(dataFrame(id, Buffer.from('x')));
    await evil.ended;
    expect(g.session('agent-repeat')).toBeUndefined();
    const event = lines.find((l) => l.securityEvent === 'agent-protocol-violations');
    expect(event).toMatchObject({ agent: 'agent-repeat', violations: 3, last: 'unknown-stream' });
    expect(
      await metricValue(registry, 'pullplane_gateway_agent_violation_disconnects_total', {
        agent: 'agent-repeat',
      }),
    ).toBe(1);
  });

  it('an agent that grants credit and stops reading fills only its own share; other agents keep working', async () => {
    const bus = createMemoryBus();
    const backend = await startBackend();
    const registry = new Registry();
    const share = 2 * 1024 * 1024;
    const g = await startGateway(bus, {
      registry,
      relayBudgetBytes: 6 * 1024 * 1024,
      agentLimits: { relayShareBytes: share },
    });
    await startHonestAgent('agent-b', g, backend.url);
    const evil = await hostileAgent(g, 'agent-sink');
    const { router } = await startRouter(bus, ['agent-b', 'agent-sink']);

    // The upload's Open arrives; the agent grants a gigabyte of credit and reads no further.
    const upload = router.open('agent-sink', {
      head: { case: 'http', value: { method: 'PUT', path: '/upload', headers: [] } },
      hasBody: true,
    });
    const [o] = await evil.opensArrived(1);
    evil.write(windowUpdateFrame(o!.streamId, 1024 * 1024 * 1024));
    evil.call.pause();
    const chunk = Buffer.alloc(64 * 1024, 0x55);
    // One chunk a turn, so the other side of this process keeps running meanwhile.
    const pump = () => {
      if (upload.destroyed) return;
      if (upload.write(chunk)) setImmediate(pump);
      else upload.once('drain', pump);
    };
    pump();
    // The relay passes on only the credit the agent's share has room for: the upload spends it
    // and stalls, its bytes waiting for the stalled agent, within its share.
    const shareBudget = g.session('agent-sink')!.relayBudget;
    await expect.poll(() => shareBudget.outstanding, { timeout: 10_000 }).toBeGreaterThan(share - 2 * WINDOW);
    expect(g.relayBudget.peakOutstanding).toBeLessThanOrEqual(share);
    expect(shareBudget.peakReserved).toBeLessThanOrEqual(share);

    // The next upload to it waits too: it may send only its stream's window, which the relay
    // holds for every open stream; what waits for the agent stays within its share.
    const again = router.open('agent-sink', {
      head: { case: 'http', value: { method: 'PUT', path: '/again', headers: [] } },
      body: Buffer.alloc(share + 64 * 1024, 1),
    });

    // Others are not starved: a 3 MiB upload to another agent passes through the same gateway.
    const other = router.open('agent-b', {
      head: { case: 'http', value: { method: 'PUT', path: '/other', headers: [] } },
      body: Buffer.alloc(3 * 1024 * 1024, 2),
    });
    expect(await text(other)).toBe('PUT /other 3145728');
    expect(shareBudget.peakOutstanding).toBeLessThanOrEqual(share);
    // Slowed, not refused: both uploads to the stalled agent are still open.
    expect(upload.destroyed).toBe(false);
    expect(again.destroyed).toBe(false);
    expect(
      await metricValue(registry, 'pullplane_gateway_relay_budget_resets_total', { scope: 'agent' }),
    ).toBe(0);

    // When the stalled tunnel goes away, so does what was queued and held for it.
    const failed = outcome(upload);
    evil.call.cancel();
    await evil.ended;
    expect((await failed)?.message).toBeDefined();
    await expect.poll(() => g.relayBudget.outstanding).toBe(0);
    await expect.poll(() => g.relayBudget.reserved).toBe(0);
  });
});
