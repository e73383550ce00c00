import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Agent } from '@pullplane/agent-core';
import type { Gateway } from '@pullplane/gateway';
import type { RedisProxyService } from '@pullplane/redis-proxy';
import { encodeCommand, RespDecoder, type RespValue } from '@pullplane/resp';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentPath, startAgentPath } from './agent-path.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// Real nats-server; a gateway holding agent-a's tunnel with an mTLS internal listener; two
// redis-proxy apps, each with its own NATS connection, reaching that gateway over the network
// like separate replicas; real redis-servers for the principal and for the agent.
let path: AgentPath;
let gateway: Gateway;
let agentDirect: Redis;
let agent: Agent;
let replicas: RedisProxyService[];
let registries: Registry[];
const clients: Redis[] = [];

beforeAll(async () => {
  path = await startAgentPath({ logger, replicas: 2, requestTimeout: '2s' });
  ({ gateway, agentDirect, agent, replicas, registries } = path);
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await path?.stop();
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

  it('passes a 1 MiB agent value on whole, alone and gathered with a principal key', async () => {
    const a = client(0);
    // Random bytes: it arrives in many reads on every hop, and nothing may be lost between them.
    const big = randomBytes(1024 * 1024);
    const key = 'app|managed-resources|agent-a_big|1.8.3.gz';
    await a.set(key, big);
    expect((await a.getBuffer(key))?.equals(big)).toBe(true);
    await a.set('settings', 'x');
    // MGET across principal and agent keys gathers the values (decoded again from the pieces).
    const [principal, agentValue] = await a.mgetBuffer('settings', key);
    expect(principal?.toString()).toBe('x');
    expect(agentValue?.equals(big)).toBe(true);
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
    // Every route has its series from the start, counted or not.
    for (const route of ['split', 'refused'])
      expect(text).toMatch(new RegExp(`commands_total\\{route="${route}"\\} \\d`));
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
