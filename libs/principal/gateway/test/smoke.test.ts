import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { createMemoryBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import type { Frame } from '@pullplane/proto';
import { AgentRouter, GatewayLink } from '@pullplane/router';
import { Multiplexer } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, expect, it } from 'vitest';
import { Gateway } from '../src/index.js';

const logger = pino({ level: 'silent' });
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Backend, gateway, agent and proxy-side router, started once for the tests of this file. */
async function startStand() {
  const backend = http.createServer((req, res) => {
    if (req.url === '/upload') {
      let n = 0;
      req.on('data', (c: Buffer) => {
        n += c.length;
      });
      req.on('end', () => res.end(String(n)));
      return;
    }
    if (req.url === '/big') {
      // Writes that do not divide the tunnel window leave odd remainders; byte-exact credit
      // would turn them into a stream of tiny frames (silly window syndrome).
      let left = 120;
      const pump = () => {
        while (left-- > 0) if (!res.write(Buffer.alloc(50_000, 1))) return void res.once('drain', pump);
        res.end();
      };
      return pump();
    }
    res.setHeader('x-seen-auth', String(req.headers.authorization ?? 'none'));
    res.end(`hello ${req.method} ${req.url}`);
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  cleanups.push(() => backend.close());
  const bus = createMemoryBus();
  const registry = new Registry();
  const gateway = new Gateway({
    bus,
    logger,
    registry,
    agentListener: { host: '127.0.0.1', port: 0 },
    internalListener: { host: '127.0.0.1', port: 0 },
    advertiseHost: '127.0.0.1',
    authenticateAgent: (ctx) => {
      const v = ctx.metadata.get('x-agent')[0];
      return typeof v === 'string'
        ? { ok: true, identity: v }
        : { ok: false, code: 'MISSING', reason: 'no x-agent' };
    },
    authenticateInternal: () => ({ ok: true, identity: 'proxy' }),
    // Not the agent's defaults, so the upload below runs with settings the agent took from Welcome.
    maxChunkSize: 128 * 1024,
    initialWindow: 1024 * 1024,
    drainTimeoutMs: 2000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
  cleanups.push(() => gateway.stop());
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`, skipTLSVerify: true },
    { name: 'u', token: 'agent-token' },
  );
  const { Metadata } = await import('@grpc/grpc-js');
  const agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    credentials: tunnelCredentials.insecure(),
    metadata: () => {
      const md = new Metadata();
      md.set('x-agent', 'agent-a');
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
  const router = new AgentRouter({ bus, logger, credentials: tunnelCredentials.insecure() });
  await router.start();
  cleanups.push(() => router.stop());
  await expect.poll(() => router.lookup('agent-a'), { timeout: 5000 }).toBeTruthy();
  return { router, registry };
}
let stand: ReturnType<typeof startStand> | undefined;
const started = () => {
  stand ??= startStand();
  return stand;
};

it('smoke: proxy-side router -> internal listener -> gateway -> agent -> backend', async () => {
  const { router, registry } = await started();
  const s = router.open('agent-a', {
    head: {
      case: 'http',
      value: {
        method: 'GET',
        path: '/api/v1/pods',
        headers: [{ name: 'Authorization', value: 'Bearer caller' }],
      },
    },
  });
  const head = await s.responseHead();
  expect(head.status).toBe(200);
  expect(head.headers.find((h) => h.name.toLowerCase() === 'x-seen-auth')?.value).toBe('Bearer agent-token');
  expect(await text(s)).toBe('hello GET /api/v1/pods');

  // A request body larger than the agent's default window, sent at the gateway's window.
  const upload = router.open('agent-a', {
    head: { case: 'http', value: { method: 'POST', path: '/upload', headers: [] } },
    hasBody: true,
  });
  upload.end(Buffer.alloc(3 * 1024 * 1024, 7));
  expect((await upload.responseHead()).status).toBe(200);
  expect(await text(upload)).toBe(String(3 * 1024 * 1024));

  // Count the credit the agent receives for one large response (batches are unpacked by
  // receive() calling itself, so single frames are counted once each).
  let windowUpdates = 0;
  const original = Multiplexer.prototype.receive;
  Multiplexer.prototype.receive = function (this: Multiplexer, f) {
    if (f.kind.case === 'windowUpdate') windowUpdates++;
    original.call(this, f);
  };
  let total = 0;
  try {
    const big = router.open('agent-a', {
      head: { case: 'http', value: { method: 'GET', path: '/big', headers: [] } },
    });
    big.on('data', (c: Buffer) => {
      total += c.length;
    });
    await new Promise((r) => big.on('end', r));
  } finally {
    Multiplexer.prototype.receive = original;
  }
  expect(total).toBe(120 * 50_000);
  // No silly window: credit returns in steps of a quarter window (1 MiB here) or more, never
  // chunk by chunk, so the agent is never held to tiny frames.
  expect(windowUpdates).toBeGreaterThan(0);
  expect(windowUpdates).toBeLessThanOrEqual(Math.ceil(total / (256 * 1024)) + 1);
  // Heartbeats flow both ways: the gateway's own pings come back as pongs.
  await expect
    .poll(
      async () =>
        (await registry.getSingleMetricAsString('pullplane_gateway_heartbeat_rtt_seconds')).match(
          /_count (\d+)/,
        )?.[1],
      { timeout: 15_000 },
    )
    .not.toBe('0');
  expect(() =>
    router.open('nobody', { head: { case: 'http', value: { method: 'GET', path: '/', headers: [] } } }),
  ).toThrow(/Agent is not connected/);
});

it('relays a small response to the proxy as one ResponseHead carrying body and end', async () => {
  const { router } = await started();
  // What the proxy side's links receive from the gateway, message by message.
  type OnFrame = (f: Frame) => void;
  const proto = GatewayLink.prototype as unknown as { onFrame: OnFrame };
  const original = proto.onFrame;
  const seen: Array<{ kind: string | undefined; body?: number; end?: boolean }> = [];
  proto.onFrame = function (this: unknown, f) {
    const k = f.kind;
    seen.push(
      k.case === 'responseHead'
        ? { kind: k.case, body: k.value.body.byteLength, end: k.value.endStream }
        : { kind: k.case },
    );
    original.call(this, f);
  };
  // What the proxy side writes to the gateway: messages on its links' calls.
  const sent: string[] = [];
  const links = router.linksTo(router.lookup('agent-a')!.internalAddress);
  const restore = links.map((link) => {
    type Transport = { write: (f: Frame, cb?: () => void) => boolean };
    const transport = (link as unknown as { call: { sink: { transport: Transport } } }).call.sink.transport;
    const write = transport.write;
    transport.write = (f, cb) => {
      sent.push(f.kind.case === 'open' ? `open hasBody=${f.kind.value.hasBody}` : String(f.kind.case));
      return write.call(transport, f, cb);
    };
    return () => {
      transport.write = write;
    };
  });
  try {
    const s = router.open('agent-a', {
      head: { case: 'http', value: { method: 'GET', path: '/small', headers: [] } },
    });
    expect((await s.responseHead()).status).toBe(200);
    expect(await text(s)).toBe('hello GET /small');
  } finally {
    proto.onFrame = original;
    for (const r of restore) r();
  }
  // The request was one message: an Open that ends the request side.
  expect(links.length).toBeGreaterThan(0);
  expect(sent).toEqual(['open hasBody=false']);
  // Head, body and end in separate messages cost the proxy three reads and three turns.
  expect(seen.filter((f) => f.kind !== 'welcome')).toEqual([
    { kind: 'responseHead', body: 'hello GET /small'.length, end: true },
  ]);
});
