import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { Agent, RedisExecutor } from '@pullplane/agent-core';
import { parseAuthMethod } from '@pullplane/auth';
import { type Bus, connectNatsBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway, internalAuthenticator } from '@pullplane/gateway';
import {
  createRedisProxyService,
  type RedisProxyService,
  validateRedisProxyConfig,
} from '@pullplane/redis-proxy';
import {
  createTestPki,
  type NatsServerHandle,
  type RedisServerHandle,
  type SlowHop,
  startNatsServer,
  startRedisServer,
  startSlowHop,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisProxyOptions } from '../src/options.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// A burst of large agent-side reads through a small relay share: real nats-server, a gateway
// holding agent-a's tunnel with an mTLS internal listener and a 7 MiB share per agent, one
// redis-proxy app reaching it over the network, real redis-servers for the principal and the
// agent. The gateway slows the burst to the share; no command is refused.
let dir: string;
let nats: NatsServerHandle;
let gatewayBus: Bus;
let gateway: Gateway;
const gatewayRegistry = new Registry();
let slowHop: SlowHop;
const SHARE = 7 * 1024 * 1024;
let principal: RedisServerHandle;
let agentRedis: RedisServerHandle;
let agentDirect: Redis;
let executor: RedisExecutor;
let agent: Agent;
const replicas: RedisProxyService[] = [];
const registries: Registry[] = [];
const clients: Redis[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'redis-proxy-'));
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  nats = await startNatsServer();
  principal = await startRedisServer({ password: 'argocd-redis-pw' });
  agentRedis = await startRedisServer();
  agentDirect = new Redis({ host: agentRedis.host, port: agentRedis.port });
  const pki = await createTestPki();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const tls = { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem };
  gatewayBus = await connectNatsBus({ servers: [nats.url], name: 'gateway' });
  const internal = internalAuthenticator(parseAuthMethod('mtls'), ['redis-proxy']);
  gateway = new Gateway({
    bus: gatewayBus,
    logger,
    registry: gatewayRegistry,
    agentLimits: { relayShareBytes: SHARE },
    agentListener: { host: '127.0.0.1', port: 0, tls: { ...tls, requireClientCert: true } },
    internalListener: {
      host: '127.0.0.1',
      port: 0,
      tls: {
        ...tls,
        requireClientCert: true,
        ...(internal.perConnection ? { authorize: internal.perConnection } : {}),
      },
    },
    advertiseHost: '127.0.0.1',
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: internal.perCall,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();

  const agentCert = await pki.agentCert('agent-a');
  executor = new RedisExecutor({
    agentName: 'agent-a',
    endpoint: { host: agentRedis.host, port: agentRedis.port },
    logger,
  });
  agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: credentials.createSsl(
      Buffer.from(pki.ca.certPem),
      Buffer.from(agentCert.keyPem),
      Buffer.from(agentCert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    enableResourceProxy: false,
    logger,
    handlers: { redis: (s) => executor.handle(s) },
  });
  agent.start();

  const proxyCert = await pki.proxyCert('redis-proxy');
  for (let i = 0; i < 1; i++) {
    const { config } = loadConfig(redisProxyOptions, {
      argv: [
        '--listen-host=127.0.0.1',
        '--listen-port=0',
        '--metrics-port=0',
        '--healthz-port=0',
        `--redis-server-address=127.0.0.1:${principal.port}`,
        `--nats-url=${nats.url}`,
        '--nats-insecure',
        `--gateway-cert-path=${write('proxy.crt', proxyCert.certPem)}`,
        `--gateway-key-path=${write('proxy.key', proxyCert.keyPem)}`,
        `--gateway-ca-path=${write('ca.crt', pki.ca.certPem)}`,
        '--gateway-server-name=localhost',
        '--request-timeout=30s',
      ],
      env: { REDIS_PASSWORD: 'argocd-redis-pw' },
      validate: (c) => validateRedisProxyConfig(c, { REDIS_PASSWORD: 'argocd-redis-pw' }),
    });
    const registry = new Registry();
    registries.push(registry);
    const app = createRedisProxyService(config, { logger, registry });
    await app.start();
    replicas.push(app);
  }
  const deadline = Date.now() + 15_000;
  while (!replicas.every((r) => r.router!.lookup('agent-a') !== undefined)) {
    if (Date.now() > deadline) throw new Error('agent-a never showed up in presence');
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
  // The proxy reaches the gateway through a hop slower than the agent's tunnel, as across a
  // network: what the agent sends waits in the gateway.
  // The gateway's bytes go back at most 64 KiB every 2 ms: the link is slower than the tunnel.
  slowHop = await startSlowHop(`127.0.0.1:${gateway.internalPort}`, { everyMs: 2 });
  for (const r of replicas) {
    const table = (r.router as unknown as { table: { set(agent: string, record: unknown): void } }).table;
    table.set('agent-a', { ...r.router!.lookup('agent-a')!, internalAddress: slowHop.address });
  }
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  agentDirect?.disconnect();
  for (const r of replicas) await r.stop();
  slowHop?.close();
  await agent?.stop();
  await executor?.stop();
  await gateway?.stop();
  await gatewayBus?.close();
  await Promise.all([nats?.stop(), principal?.stop(), agentRedis?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const port = (i: number) => replicas[i]!.proxy!.port;
function client(i: number): Redis {
  const c = new Redis({
    host: '127.0.0.1',
    port: port(i),
    password: 'argocd-redis-pw',
    maxRetriesPerRequest: 0,
  });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

async function metricValue(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return m?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
}

describe('a burst of large agent-key reads within a small relay share', () => {
  it('24 clients each reading a 1 MiB agent key at once through a 7 MiB share all get it, byte for byte', async () => {
    // Each stream holds a window each way (a Redis stream carries commands too): 24 × 2 × 256 KiB
    // is more than the share, so the relay passes on no credit beyond the windows while all are
    // open, and what waits in the gateway stays within the response windows (6 MiB).
    const n = 24;
    const values = Array.from({ length: n }, (_, i) => {
      const v = Buffer.alloc(1024 * 1024);
      for (let j = 0; j < v.length; j++) v[j] = (j * 13 + i * 101 + (j >> 12)) & 0xff;
      return v;
    });
    // On the agent's Redis under its own names; through the proxy with the agent in the name.
    await Promise.all(values.map((v, i) => agentDirect.set(`app|resources-tree|big${i}|1.8.3.gz`, v)));
    const readers = Array.from({ length: n }, () => client(0));
    await Promise.all(readers.map((c) => c.ping()));
    const got = await Promise.all(
      readers.map((c, i) => c.getBuffer(`app|resources-tree|agent-a_big${i}|1.8.3.gz`)),
    );
    for (const [i, v] of got.entries()) expect(v?.equals(values[i]!)).toBe(true);
    expect(await metricValue(gatewayRegistry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);
    const share = gateway.session('agent-a')!.relayBudget;
    expect(share.peakOutstanding).toBeLessThanOrEqual(SHARE);
  });
});
