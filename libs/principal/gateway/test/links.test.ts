import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { Metadata } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { FrameClient, type FrameClientCall, tunnelCredentials } from '@pullplane/grpc-frames';
import { AGENT_TUNNEL_CONNECT_PATH, type Frame, frame, ResetCode, resetFrame } from '@pullplane/proto';
import { AgentRouter, type AgentRouterOptions } from '@pullplane/router';
import {
  Deadline,
  forEachFrame,
  isTunnelError,
  type LogicalStream,
  Multiplexer,
  type TunnelStream,
} from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type Authenticator, Gateway, type GatewayOptions } from '../src/index.js';

const logger = pino({ level: 'silent' });
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const WINDOW = 256 * 1024;
const CHUNK = 64 * 1024;

/** What the backend saw: requests that arrived and responses cut off before they ended. */
interface BackendLog {
  arrivals: Map<string, number>;
  aborted: Set<string>;
  waiters: Array<() => void>;
}

async function startBackend(): Promise<{ url: string; log: BackendLog }> {
  const log: BackendLog = { arrivals: new Map(), aborted: new Set(), waiters: [] };
  const server = http.createServer((req, res) => {
    const url = req.url ?? '';
    const arrival = (log.arrivals.get(url) ?? 0) + 1;
    log.arrivals.set(url, arrival);
    res.on('close', () => {
      if (!res.writableFinished) log.aborted.add(url);
      for (const w of log.waiters.splice(0)) w();
    });
    for (const w of log.waiters.splice(0)) w();
    const big = /^\/big\/(\d+)/.exec(url);
    if (big) {
      // A large response written as fast as the tunnel takes it.
      let left = Number(big[1]);
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, 32 * 1024);
          left -= n;
          if (!res.write(Buffer.alloc(n, 7))) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    // Answers the second time only: the first request stays unanswered, head and all.
    if (url.startsWith('/once') && arrival === 1) return;
    if (url.startsWith('/hold')) {
      // Answers the head, then holds the body until the client goes away.
      res.writeHead(200);
      res.write('started\n');
      return;
    }
    res.end(`hello ${url}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log };
}

const byMetadata: Authenticator = (ctx) => {
  const v = ctx.metadata.get('x-agent')[0];
  return typeof v === 'string'
    ? { ok: true, identity: v, credential: 'agent' }
    : { ok: false, code: 'MISSING', reason: 'no x-agent' };
};

async function startGateway(bus: Bus, extra: Partial<GatewayOptions> = {}): Promise<Gateway> {
  const g = new Gateway({
    bus,
    logger,
    registry: new Registry(),
    agentListener: { host: '127.0.0.1', port: 0 },
    internalListener: { host: '127.0.0.1', port: 0 },
    advertiseHost: '127.0.0.1',
    authenticateAgent: byMetadata,
    authenticateInternal: () => ({ ok: true, identity: 'proxy' }),
    maxChunkSize: CHUNK,
    initialWindow: WINDOW,
    drainTimeoutMs: 500,
    presenceRefreshMs: 30_000,
    ...extra,
  });
  await g.start();
  cleanups.push(() => g.stop());
  return g;
}

async function startAgent(name: string, gateway: Gateway, backendUrl: string): Promise<Agent> {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: backendUrl, skipTLSVerify: true },
    { name: 'u', token: 'agent-token' },
  );
  const agent = new Agent({
    agentName: name,
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    credentials: tunnelCredentials.insecure(),
    metadata: () => {
      const md = new Metadata();
      md.set('x-agent', name);
      return md;
    },
    heartbeatIntervalMs: 1000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: true,
    resourceProxyFilter: 'none',
    logger,
  });
  agent.start();
  cleanups.push(() => agent.stop());
  await expect.poll(() => gateway.session(name), { timeout: 10_000 }).toBeTruthy();
  return agent;
}

async function startRouter(bus: Bus, agent: string, extra: Partial<AgentRouterOptions> = {}) {
  const registry = new Registry();
  const router = new AgentRouter({
    bus,
    logger,
    credentials: tunnelCredentials.insecure(),
    registry,
    ...extra,
  });
  await router.start();
  cleanups.push(() => router.stop());
  await expect.poll(() => router.lookup(agent), { timeout: 10_000 }).toBeTruthy();
  return { router, registry };
}

const get = (path: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
});

async function failureOf(s: TunnelStream): Promise<Error> {
  const err = await new Promise<Error>((resolve) => {
    const done = () => resolve(s.errored ?? new Error('closed without an error'));
    if (s.closed) return done();
    s.on('close', done);
    s.resume();
  });
  return err;
}

function waitForBackend(log: BackendLog, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (done() ? resolve() : log.waiters.push(check));
    check();
  });
}

async function metric(registry: Registry, name: string): Promise<string> {
  return registry.getSingleMetricAsString(name);
}

/** A hand-made agent speaking up to `version`; records the frames it receives. */
async function fakeAgent(
  g: Gateway,
  name: string,
  version: number,
  onStream: (s: LogicalStream, mux: Multiplexer) => void,
): Promise<{ seen: Frame[] }> {
  const client = new FrameClient({
    target: `127.0.0.1:${g.agentPort}`,
    credentials: tunnelCredentials.insecure(),
  });
  const md = new Metadata();
  md.set('x-agent', name);
  const seen: Frame[] = [];
  let mux!: Multiplexer;
  let welcome!: () => void;
  const welcomed = new Promise<void>((resolve) => {
    welcome = resolve;
  });
  const call = client.call(AGENT_TUNNEL_CONNECT_PATH, md, {
    onFrame: (f) => {
      if (f.kind.case === 'welcome') {
        mux.adopt(f.kind.value);
        welcome();
        return;
      }
      forEachFrame(f, (inner) => seen.push(inner));
      mux.receive(f);
    },
    onEnd: () => undefined,
  });
  cleanups.push(() => {
    call.cancel();
    client.close();
  });
  mux = new Multiplexer({
    sink: call.sink,
    idParity: 'even',
    onStream: (s) => onStream(s, mux),
  });
  call.write(
    frame({
      case: 'hello',
      value: {
        minProtocolVersion: 1,
        maxProtocolVersion: version,
        agentVersion: 't',
        agentName: name,
        heartbeatIntervalMs: 30_000,
      },
    }),
  );
  await welcomed;
  return { seen };
}

describe('persistent links from proxy to gateway', () => {
  it('a link that dies mid-stream fails only its streams, and the next request re-dials', async () => {
    const bus = createMemoryBus();
    const { url, log } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-a', g, url);
    const { router, registry } = await startRouter(bus, 'agent-a', { linksPerGateway: 2 });
    // Streams take the links in turn: the first to link 0, the second to link 1.
    const onFirst = router.open('agent-a', get('/hold/1'));
    const onSecond = router.open('agent-a', get('/hold/2'));
    expect((await onFirst.responseHead()).status).toBe(200);
    expect((await onSecond.responseHead()).status).toBe(200);
    const [first, second] = router.linksTo(g.internalAddress);
    expect(first?.activeStreams).toBe(1);
    expect(second?.activeStreams).toBe(1);

    // The first link's call dies under its stream.
    (first as unknown as { call: FrameClientCall }).call.cancel();
    const err = await failureOf(onFirst);
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_UNAVAILABLE');
    // The agent was told: its request to the backend is cut off too.
    await waitForBackend(log, () => log.aborted.has('/hold/1'));

    // The other link and its stream carry on; a new request takes a freshly dialled link.
    expect(onSecond.destroyed).toBe(false);
    expect(second?.usable).toBe(true);
    const again = router.open('agent-a', get('/after'));
    expect(await text(again)).toBe('hello /after');
    expect(router.linksTo(g.internalAddress)[0]).not.toBe(first);
    expect(await metric(registry, 'pullplane_router_gateway_link_redials_total')).toMatch(/ 1$/m);
    expect(log.aborted.has('/hold/2')).toBe(false);
    onSecond.destroy();
    await waitForBackend(log, () => log.aborted.has('/hold/2'));
  });

  it('a rotated link token is what the next link dials with', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const seen: string[] = [];
    const g = await startGateway(bus, {
      authenticateInternal: (ctx) => {
        seen.push(String(ctx.metadata.get('authorization')[0]));
        return { ok: true, identity: 'proxy' };
      },
    });
    await startAgent('agent-k', g, url);
    let token = 'token-1';
    const { router } = await startRouter(bus, 'agent-k', {
      linksPerGateway: 1,
      metadata: () => {
        const md = new Metadata();
        md.set('authorization', `Bearer ${token}`);
        return md;
      },
    });
    expect(await text(router.open('agent-k', get('/one')))).toBe('hello /one');
    token = 'token-2';
    const [first] = router.linksTo(g.internalAddress);
    (first as unknown as { call: FrameClientCall }).call.cancel();
    await expect.poll(() => first?.usable, { timeout: 10_000 }).toBe(false);
    expect(await text(router.open('agent-k', get('/two')))).toBe('hello /two');
    expect(seen).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it('a link past its age takes no new streams: the next link dials with the rotated token, the old one closes when idle', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const seen: string[] = [];
    const g = await startGateway(bus, {
      authenticateInternal: (ctx) => {
        seen.push(String(ctx.metadata.get('authorization')[0]));
        return { ok: true, identity: 'proxy' };
      },
    });
    await startAgent('agent-l', g, url);
    let token = 'token-1';
    const { router } = await startRouter(bus, 'agent-l', {
      linksPerGateway: 1,
      linkMaxAgeMs: 500,
      linkPingIntervalMs: 200,
      metadata: () => {
        const md = new Metadata();
        md.set('authorization', `Bearer ${token}`);
        return md;
      },
    });
    // A stream that outlives the link's age keeps its link open until it ends.
    const held = router.open('agent-l', get('/hold/aging'));
    expect((await held.responseHead()).status).toBe(200);
    const [first] = router.linksTo(g.internalAddress);
    token = 'token-2';
    await expect.poll(() => first?.usable, { timeout: 10_000 }).toBe(false);
    expect(first?.activeStreams).toBe(1);
    expect(await text(router.open('agent-l', get('/two')))).toBe('hello /two');
    expect(seen).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect(held.destroyed).toBe(false);
    held.destroy();
    await expect.poll(() => first?.activeStreams, { timeout: 10_000 }).toBe(0);
    await expect
      .poll(() => (first as unknown as { closedWith?: Error }).closedWith?.message, { timeout: 10_000 })
      .toMatch(/retired by age/);
  });

  it('a link lost before any answer: a GET is sent again, a POST is not', async () => {
    const bus = createMemoryBus();
    const { url, log } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-i', g, url);
    const { router } = await startRouter(bus, 'agent-i', { linksPerGateway: 1 });
    const read = router.open('agent-i', get('/once/get'));
    const write = router.open('agent-i', {
      head: { case: 'http', value: { method: 'POST', path: '/once/post', headers: [] } },
      body: Buffer.from('x'),
    });
    await waitForBackend(log, () => log.arrivals.has('/once/get') && log.arrivals.has('/once/post'));
    const [link] = router.linksTo(g.internalAddress);
    (link as unknown as { call: FrameClientCall }).call.cancel();
    // The same gateway still holds the agent: the GET goes there again, over a new link.
    expect(await text(read)).toBe('hello /once/get');
    expect(log.arrivals.get('/once/get')).toBe(2);
    // The POST may have been served: it fails rather than run twice.
    const err = await failureOf(write);
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_UNAVAILABLE');
    expect(log.arrivals.get('/once/post')).toBe(1);
  });

  it('1,000 concurrent streams over one link complete while one reader stays paused', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-b', g, url);
    const { router } = await startRouter(bus, 'agent-b', { linksPerGateway: 1 });
    const total = 8 * 1024 * 1024;
    const paused = router.open('agent-b', get(`/big/${total}`));
    expect((await paused.responseHead()).status).toBe(200);
    paused.pause();
    // The paused stream holds what its credit let the agent send, and no more.
    await expect.poll(() => paused.readableLength, { timeout: 10_000 }).toBeGreaterThan(0);

    const bodies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => text(router.open('agent-b', get(`/small/${i}`)))),
    );
    for (const [i, b] of bodies.entries()) expect(b).toBe(`hello /small/${i}`);
    expect(router.linksTo(g.internalAddress)).toHaveLength(1);
    // Nothing overtook credit: the agent sent the paused stream at most its window (the gateway
    // relays, so what the proxy holds is what the agent sent).
    const held = paused.readableLength;
    expect(held).toBeLessThanOrEqual(WINDOW);
    expect(paused.destroyed).toBe(false);

    let received = 0;
    for await (const chunk of paused) received += (chunk as Buffer).length;
    expect(received).toBe(total);
  });

  it('a slow reader grows no gateway memory: relayed bytes stay within the stream credit', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-c', g, url);
    const { router } = await startRouter(bus, 'agent-c', { linksPerGateway: 1 });
    const slow = router.open('agent-c', get(`/big/${32 * 1024 * 1024}`));
    await slow.responseHead();
    slow.pause();
    await expect.poll(() => slow.readableLength, { timeout: 10_000 }).toBeGreaterThan(0);
    // A request answered over the same tunnel and link afterwards: whatever the agent sent
    // for the slow stream before it has passed the gateway by now (both transports are ordered).
    expect(await text(router.open('agent-c', get('/after')))).toBe('hello /after');
    expect(g.relayBudget.peakOutstanding).toBeGreaterThan(0);
    expect(g.relayBudget.peakOutstanding).toBeLessThanOrEqual(WINDOW);
    expect(slow.readableLength).toBeLessThanOrEqual(WINDOW);
    slow.destroy();
  });

  it('resets a stream that would take the relay past its memory budget, and only that one', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    // Less than one chunk: the first full chunk relayed would exceed it.
    const g = await startGateway(bus, { relayBudgetBytes: 16 * 1024 });
    await startAgent('agent-d', g, url);
    const { router } = await startRouter(bus, 'agent-d', { linksPerGateway: 1 });
    const big = router.open('agent-d', get(`/big/${1024 * 1024}`));
    const err = await failureOf(big);
    expect(err.message).toMatch(/relay memory budget of 16384 bytes exhausted/);
    expect(g.relayBudget.outstanding).toBe(0);
    expect(await text(router.open('agent-d', get('/small')))).toBe('hello /small');
  });

  it("readers that stop reading hold no more of the proxy's memory than its link buffer budget: the stream that would exceed it is reset alone", async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-m', g, url);
    const budget = 600 * 1024;
    const { router, registry } = await startRouter(bus, 'agent-m', {
      linksPerGateway: 1,
      linkBufferBudgetBytes: budget,
    });
    // Four readers that read nothing: each may be sent its window (256 KiB), 1 MiB together.
    const size = 4 * 1024 * 1024;
    const streams = Array.from({ length: 4 }, (_, i) => {
      const s = router.open('agent-m', get(`/big/${size}?n=${i}`));
      s.pause();
      return s;
    });
    const resets = streams.map(
      (s) => new Promise<Error>((resolve) => s.once('error', (err: Error) => resolve(err))),
    );
    const err = await Promise.race(resets);
    expect(err.message).toMatch(/memory for responses on gateway links \(614400 bytes\) is exhausted/);
    const linkBudget = (router as unknown as { linkBudget: { peakOutstanding: number; outstanding: number } })
      .linkBudget;
    expect(linkBudget.peakOutstanding).toBeLessThanOrEqual(budget);
    expect(await metric(registry, 'pullplane_router_link_budget_resets_total')).toMatch(/_total [1-9]/);
    // The others (and the link) carry on: read, each completes, unless it too was reset for the
    // same budget before its reading began (frames of several streams arrive in one message, so
    // how many go before the first reader drains is not fixed).
    const survivors = streams.filter((s) => !s.destroyed);
    expect(survivors.length).toBeGreaterThan(0);
    const outcomes = await Promise.all(
      survivors.map(async (s) => {
        let n = 0;
        try {
          for await (const c of s) n += (c as Buffer).length;
          return n;
        } catch (e) {
          return (e as Error).message;
        }
      }),
    );
    for (const o of outcomes)
      if (typeof o === 'string')
        expect(o).toMatch(/memory for responses on gateway links \(614400 bytes\) is exhausted/);
      else expect(o).toBe(size);
    expect(outcomes.filter((o) => o === size).length).toBeGreaterThan(0);
    expect(await text(router.open('agent-m', get('/after')))).toBe('hello /after');
    expect(linkBudget.outstanding).toBe(0);
  });

  it('cancelling at the proxy resets the stream at the agent', async () => {
    const bus = createMemoryBus();
    const { url, log } = await startBackend();
    const g = await startGateway(bus);
    await startAgent('agent-e', g, url);
    const { router } = await startRouter(bus, 'agent-e');
    const s = router.open('agent-e', get('/hold/cancel'));
    expect((await s.responseHead()).status).toBe(200);
    expect(log.aborted.has('/hold/cancel')).toBe(false);
    s.destroy();
    await waitForBackend(log, () => log.aborted.has('/hold/cancel'));
    expect(g.relayBudget.outstanding).toBe(0);
  });

  it('retries a stale route at the gateway that holds the agent now, sending the Open again', async () => {
    const bus = createMemoryBus();
    const { url } = await startBackend();
    const stale = await startGateway(bus);
    const holder = await startGateway(bus);
    await startAgent('agent-f', holder, url);
    const { router } = await startRouter(bus, 'agent-f');
    // The proxy's table still says the agent is on the other gateway (it moved).
    const record = router.lookup('agent-f')!;
    (router as unknown as { table: Map<string, unknown> }).table.set('agent-f', {
      ...record,
      internalAddress: stale.internalAddress,
      sessionId: 'gone',
    });
    const s = router.open('agent-f', {
      head: { case: 'http', value: { method: 'POST', path: '/moved', headers: [] } },
      body: Buffer.from('inline body'),
    });
    expect(await text(s)).toBe('hello /moved');
    expect(stale.session('agent-f')).toBeUndefined();
    expect(router.linksTo(stale.internalAddress).length).toBeGreaterThan(0);
    expect(router.linksTo(holder.internalAddress).length).toBeGreaterThan(0);
  });

  it("sends a stale route's Open again with what is left of the request's deadline, and not at all once it passed", async () => {
    const bus = createMemoryBus();
    const stale = await startGateway(bus);
    const holder = await startGateway(bus);
    const timeouts: number[] = [];
    await fakeAgent(holder, 'agent-j', 2, (s) => {
      timeouts.push(s.open.timeoutMs);
      s.respond(200);
      s.end('answered');
    });
    const { router } = await startRouter(bus, 'agent-j');
    const table = (router as unknown as { table: Map<string, unknown> }).table;
    const record = router.lookup('agent-j')!;
    // The proxy's table says the agent is on the other gateway (it moved).
    const moved = () =>
      table.set('agent-j', { ...record, internalAddress: stale.internalAddress, sessionId: 'gone' });
    // Time, as this process reads it, stands still except while the router asks the store
    // where the agent is now: that takes `lookupMs`.
    let lookupMs = 0;
    const presenceGet = bus.presence.get.bind(bus.presence);
    bus.presence.get = (agent) => {
      vi.setSystemTime(Date.now() + lookupMs);
      return presenceGet(agent);
    };
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      lookupMs = 10_000;
      moved();
      const s = router.open('agent-j', { ...get('/moved'), deadline: Deadline.after(30_000) });
      expect(await text(s)).toBe('answered');
      // The first Open (to the stale gateway) carried 30 s; the one sent again what was left.
      expect(timeouts).toEqual([20_000]);

      lookupMs = 40_000;
      moved();
      const late = router.open('agent-j', { ...get('/too-late'), deadline: Deadline.after(30_000) });
      const err = await failureOf(late);
      expect(isTunnelError(err) && err.code).toBe('TUNNEL_UNAVAILABLE');
      expect(timeouts).toEqual([20_000]);
    } finally {
      vi.useRealTimers();
      bus.presence.get = presenceGet;
    }
    // A streaming request's deadline bounds its routing only: the agent gets none.
    expect(
      await text(
        router.open('agent-j', { ...get('/watch'), deadline: Deadline.after(30_000), routeOnly: true }),
      ),
    ).toBe('answered');
    expect(timeouts).toEqual([20_000, 0]);
  });

  it('tells a route refusal (retry elsewhere) from an agent answering NOT_FOUND (no retry)', async () => {
    const bus = createMemoryBus();
    const g = await startGateway(bus);
    // An agent that answers every stream with a Reset claiming to be a route refusal.
    let opens = 0;
    await fakeAgent(g, 'agent-g', 2, (s, mux) => {
      opens++;
      mux.send(resetFrame(s.id, ResetCode.NO_ROUTE, 'no such thing here'));
    });
    const { router } = await startRouter(bus, 'agent-g');
    const err = await failureOf(router.open('agent-g', get('/x')));
    // The gateway turned the agent's claim into an answer: the proxy did not try again.
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_AGENT_NOT_FOUND');
    expect(err.message).toBe('no such thing here');
    expect(opens).toBe(1);

    // A real refusal: the gateway does not hold the agent, and presence knows no other.
    const record = router.lookup('agent-g')!;
    const table = (router as unknown as { table: Map<string, unknown> }).table;
    table.set('agent-ghost', { ...record, agent: 'agent-ghost' });
    const refused = await failureOf(router.open('agent-ghost', get('/x')));
    expect(refused.message).toBe('Agent is not connected: agent-ghost');
    expect(opens).toBe(1);
  });

  it('unfolds inline bodies and end flags for a v1 agent', async () => {
    const bus = createMemoryBus();
    const g = await startGateway(bus);
    const agent = await fakeAgent(g, 'agent-h', 1, (s) => {
      // Read without an async iterator, which would destroy the duplex when its input ends.
      let body = '';
      s.on('data', (c: Buffer) => {
        body += c.toString();
      });
      s.on('end', () => {
        s.respond(200);
        s.end(`got ${body}`);
      });
    });
    const { router } = await startRouter(bus, 'agent-h');
    const s = router.open('agent-h', {
      head: { case: 'http', value: { method: 'POST', path: '/v1', headers: [] } },
      body: Buffer.from('a small body'),
    });
    expect((await s.responseHead()).status).toBe(200);
    expect(await text(s)).toBe('got a small body');
    // The proxy sent one Open with the body inline and its end; a v1 agent gets them apart.
    const kinds = agent.seen.map((f) =>
      f.kind.case === 'open'
        ? `open hasBody=${f.kind.value.hasBody} inline=${f.kind.value.body.byteLength}`
        : f.kind.case === 'data'
          ? `data ${f.kind.value.chunk.byteLength} end=${f.kind.value.endStream}`
          : f.kind.case,
    );
    expect(kinds.filter((k) => k !== 'windowUpdate')).toEqual([
      'open hasBody=true inline=0',
      `data ${'a small body'.length} end=false`,
      'end',
    ]);
  });
});
