import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
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
import { encodeCommand, RespDecoder, type RespValue } from '@pullplane/resp';
import {
  createTestPki,
  type NatsServerHandle,
  type RedisServerHandle,
  startNatsServer,
  startRedisServer,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisProxyOptions } from '../src/options.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// Real nats-server; a gateway holding agent-a's tunnel with an mTLS internal listener; two
// redis-proxy apps, each with its own NATS connection, reaching that gateway over the network
// like separate replicas; real redis-servers for the principal and for the agent.
let dir: string;
let nats: NatsServerHandle;
let gatewayBus: Bus;
let gateway: Gateway;
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
    registry: new Registry(),
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
  for (let i = 0; i < 2; i++) {
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
        '--request-timeout=2s',
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
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  agentDirect?.disconnect();
  for (const r of replicas) await r.stop();
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
const activeStreams = () => gateway.session('agent-a')?.mux.activeStreams ?? 0;

/** A go-redis v9 stand-in: HELLO 3 with AUTH, CLIENT SETINFO, then commands; pushes kept apart. */
class GoRedisLike {
  readonly pushes: RespValue[] = [];
  private readonly waiting: Array<(v: RespValue) => void> = [];
  private constructor(private readonly socket: Socket) {
    const d = new RespDecoder({
      onValue: (v) => (v.type === 'push' ? this.pushes.push(v) : this.waiting.shift()?.(v)),
      onError: (e) => socket.destroy(e),
    });
    socket.on('data', (c: Buffer) => d.push(c));
  }
  static async connect(p: number): Promise<GoRedisLike> {
    const socket = connect({ host: '127.0.0.1', port: p });
    await new Promise((r) => socket.once('connect', r));
    const c = new GoRedisLike(socket);
    const hello = await c.call('HELLO', '3', 'AUTH', 'default', 'argocd-redis-pw');
    expect(hello.type).toBe('map');
    expect((await c.call('CLIENT', 'SETINFO', 'LIB-NAME', 'go-redis(,go1.22)')).type).toBe('simple');
    return c;
  }
  call(...args: Array<string | Buffer>): Promise<RespValue> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.socket.write(encodeCommand(args));
    });
  }
  send(...args: string[]): void {
    this.socket.write(encodeCommand(args));
  }
  close(): void {
    this.socket.destroy();
  }
}

const bulk = (v: RespValue | undefined) => (v?.type === 'bulk' ? v.value : undefined);

describe('two redis-proxy replicas over NATS presence', () => {
  it("simulates Argo CD: SET PX of gzip JSON, GET it byte-exact, SUBSCRIBE, PUBLISH on the agent's Redis", async () => {
    const writer = await GoRedisLike.connect(port(0));
    const reader = await GoRedisLike.connect(port(1));
    const watcher = await GoRedisLike.connect(port(1));
    const key = 'app|managed-resources|agent-a_guestbook|1.8.3.gz';
    const channel = 'app|managed-resources|agent-a_guestbook|1.8.3';
    const resources = Array.from({ length: 300 }, (_, i) => ({
      group: 'apps',
      kind: 'Deployment',
      namespace: 'demo',
      name: `guestbook-${i}`,
      liveState: JSON.stringify({ spec: { replicas: i } }),
    }));
    const value = gzipSync(JSON.stringify(resources));
    expect(await writer.call('SET', key, value, 'PX', '86400000')).toEqual({ type: 'simple', value: 'OK' });
    expect((await agentDirect.getBuffer('app|managed-resources|guestbook|1.8.3.gz'))?.equals(value)).toBe(
      true,
    );
    const got = bulk(await reader.call('GET', key));
    expect(got?.equals(value)).toBe(true);
    expect(JSON.parse(gunzipSync(got!).toString())).toEqual(resources);

    watcher.send('SUBSCRIBE', channel);
    await expect.poll(() => watcher.pushes.length, { timeout: 5_000 }).toBe(1);
    await agentDirect.publish('app|managed-resources|guestbook|1.8.3', '');
    await expect.poll(() => watcher.pushes.length, { timeout: 5_000 }).toBe(2);
    const push = watcher.pushes[1]!;
    expect(push.type).toBe('push');
    const items = push.type === 'push' ? push.value.map((v) => bulk(v)?.toString()) : [];
    expect(items).toEqual(['message', channel, '']);
    for (const c of [writer, reader, watcher]) c.close();
    await expect.poll(activeStreams, { timeout: 5_000 }).toBe(0);
  });

  it('serves the same agent from both replicas at once', async () => {
    const a = client(0);
    const b = client(1);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        (i % 2 ? a : b).set(`app|resources-tree|agent-a_app${i}|1.8.3.gz`, `tree-${i}`, 'PX', 60_000),
      ),
    );
    const read = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        (i % 2 ? b : a).get(`app|resources-tree|agent-a_app${i}|1.8.3.gz`),
      ),
    );
    expect(read).toEqual(Array.from({ length: 100 }, (_, i) => `tree-${i}`));
    // Principal keys from both replicas land in the one principal Redis.
    await a.set('settings', 'x');
    expect(await b.get('settings')).toBe('x');
    expect(await a.mget('settings', 'app|resources-tree|agent-a_app1|1.8.3.gz')).toEqual(['x', 'tree-1']);
  });

  it('keeps subscriptions on both replicas through an agent disconnect and reconnect', async () => {
    const subs = [client(0), client(1)];
    const got: string[][] = [[], []];
    for (const [i, s] of subs.entries()) {
      s.on('message', (_ch: string, msg: string) => got[i]!.push(msg));
      await s.subscribe('app|resources-tree|agent-a_podinfo|1.8.3');
    }
    await agentDirect.publish('app|resources-tree|podinfo|1.8.3', 'before');
    await expect.poll(() => got.map((g) => g.length), { timeout: 5_000 }).toEqual([1, 1]);
    const before = agent.connector.session?.sessionId;
    gateway.kick('agent-a', 'test: disconnect');
    await expect
      .poll(() => agent.connector.session?.sessionId !== before && agent.ready, { timeout: 15_000 })
      .toBe(true);
    await expect
      .poll(
        async () => {
          await agentDirect.publish('app|resources-tree|podinfo|1.8.3', 'after');
          return got.every((g) => g.includes('after'));
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe(true);
    for (const s of subs) await s.unsubscribe();
    await expect
      .poll(() => replicas.map((r) => r.proxy!.subscriptions.agents), { timeout: 5_000 })
      .toEqual([0, 0]);
    await expect.poll(activeStreams, { timeout: 5_000 }).toBe(0);
  }, 40_000);

  it('counts commands by where they were answered, and agent round trips, for Prometheus', async () => {
    const text = await registries[0]!.metrics();
    expect(text).toMatch(/redis_proxy_commands_total\{route="agent"\} [1-9]/);
    expect(text).toMatch(/redis_proxy_commands_total\{route="principal"\} [1-9]/);
    expect(text).toMatch(/redis_proxy_commands_total\{route="local"\} [1-9]/);
    expect(text).toMatch(/redis_proxy_agent_command_duration_seconds_count [1-9]/);
    expect(text).toMatch(/redis_proxy_connections \d/);
  });

  it('works with redis-cli (RESP2 and -3) against either replica', async () => {
    const { execFile } = await import('node:child_process');
    const cli = (p: number, ...args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(
          'redis-cli',
          ['-h', '127.0.0.1', '-p', String(p), ...args],
          { env: { ...process.env, REDISCLI_AUTH: 'argocd-redis-pw' } },
          (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
        ),
      );
    expect(await cli(port(0), 'SET', 'app|managed-resources|agent-a_cli|1', 'v')).toBe('OK');
    expect(await cli(port(1), '-3', 'GET', 'app|managed-resources|agent-a_cli|1')).toBe('v');
    expect(await cli(port(1), 'GET', 'app|managed-resources|agent-zz_cli|1')).toBe(
      'ERR agent agent-zz is not connected',
    );
  });
});
