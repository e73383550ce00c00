import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Agent, RedisExecutor } from '@pullplane/agent-core';
import { parseAuthMethod } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { agentAuthenticator, Gateway } from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { RespDecoder } from '@pullplane/resp';
import { AgentRouter } from '@pullplane/router';
import { createTestPki, type RedisServerHandle, startRedisServer, waitFor } from '@pullplane/testing';
import type { LogicalStream } from '@pullplane/tunnel';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createRedisProxy, type RedisProxy, type RedisProxyOptions } from '../src/index.js';

export { waitFor };

export const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));
const run = promisify(execFile);

export interface AgentUnderTest {
  name: string;
  redis: RedisServerHandle;
  agent: Agent;
  executor: RedisExecutor;
  /** A direct client of the agent's own Redis (what Argo CD on that cluster would use). */
  direct: Redis;
  /** Drops the tunnel and dials again (a restart). */
  reconnect(): Promise<void>;
}

export interface Stack {
  principal: RedisServerHandle;
  principalClient: Redis;
  gateway: Gateway;
  router: AgentRouter;
  proxy: RedisProxy;
  agents: Map<string, AgentUnderTest>;
  /** Streams open on an agent's tunnel right now (gateway side). */
  activeStreams(agent: string): number;
  /** An ioredis client of the proxy (RESP2: ioredis 5 does not speak RESP3). */
  client(opts?: { password?: string }): Redis;
  /** redis-cli against the proxy; returns stdout. */
  cli(args: string[], opts?: { resp3?: boolean; password?: string; input?: string }): Promise<string>;
  close(): Promise<void>;
}

/**
 * The redis proxy in front of a real principal redis-server, a gateway holding the agents'
 * tunnels (single-process routing), and agents each with their own real redis-server.
 */
export async function startStack(
  options: {
    agents?: string[];
    password?: string;
    proxy?: Partial<RedisProxyOptions>;
    /** Agents whose redis streams go to this handler instead of their executor (a stalled agent). */
    handlers?: Record<string, (stream: LogicalStream) => void>;
  } = {},
): Promise<Stack> {
  const names = options.agents ?? ['agent-a', 'agent-b'];
  const principal = await startRedisServer(options.password ? { password: options.password } : {});
  const pki = await createTestPki();
  const server = await pki.serverCert();
  const bus = createMemoryBus();
  const gateway = new Gateway({
    bus,
    logger,
    registry: new Registry(),
    agentListener: {
      host: '127.0.0.1',
      port: 0,
      tls: { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem, requireClientCert: true },
    },
    advertiseHost: '127.0.0.1',
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: () => ({ ok: false, code: 'NO_INTERNAL', reason: 'in-process only' }),
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
  const router = new AgentRouter({ bus, logger, credentials: tunnelCredentials.insecure(), local: gateway });
  await router.start();

  const agents = new Map<string, AgentUnderTest>();
  for (const name of names) {
    const redis = await startRedisServer();
    const cert = await pki.agentCert(name);
    const executor = new RedisExecutor({
      agentName: name,
      endpoint: { host: redis.host, port: redis.port },
      logger,
    });
    const agent = new Agent({
      agentName: name,
      agentVersion: 'test',
      target: `127.0.0.1:${gateway.agentPort}`,
      serverNameOverride: 'localhost',
      credentials: tunnelCredentials.tls(
        Buffer.from(pki.ca.certPem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.certPem),
      ),
      heartbeatIntervalMs: 5_000,
      keepAlivePingIntervalMs: 0,
      enableResourceProxy: false,
      logger,
      handlers: { redis: options.handlers?.[name] ?? ((s) => executor.handle(s)) },
    });
    agent.start();
    const direct = new Redis({ host: redis.host, port: redis.port, lazyConnect: true });
    agents.set(name, {
      name,
      redis,
      agent,
      executor,
      direct,
      async reconnect() {
        await agent.stop();
        agent.start();
        await waitFor(() => agent.ready && router.lookup(name) !== undefined, 10_000);
      },
    });
  }

  const proxy = createRedisProxy({
    router,
    logger,
    registry: new Registry(),
    host: '127.0.0.1',
    port: 0,
    principal: {
      host: principal.host,
      port: principal.port,
      ...(options.password ? { password: options.password } : {}),
    },
    ...(options.password ? { password: options.password } : {}),
    ...options.proxy,
  });
  await proxy.listen();
  await waitFor(() => names.every((n) => router.lookup(n) !== undefined), 10_000);

  const clients: Redis[] = [];
  const principalClient = new Redis({
    host: principal.host,
    port: principal.port,
    ...(options.password ? { password: options.password } : {}),
  });
  clients.push(principalClient);
  return {
    principal,
    principalClient,
    gateway,
    router,
    proxy,
    agents,
    activeStreams: (agent) => gateway.session(agent)?.mux.activeStreams ?? 0,
    client(opts = {}) {
      const password = opts.password ?? options.password;
      const c = new Redis({
        host: '127.0.0.1',
        port: proxy.port,
        ...(password ? { password } : {}),
        maxRetriesPerRequest: 0,
      });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
    async cli(args, opts = {}) {
      const password = opts.password ?? options.password;
      const base = ['-h', '127.0.0.1', '-p', String(proxy.port), ...(opts.resp3 ? ['-3'] : [])];
      const env = { ...process.env, ...(password ? { REDISCLI_AUTH: password } : {}) };
      if (opts.input !== undefined) {
        return new Promise((resolve, reject) => {
          const child = execFile('redis-cli', [...base, ...args], { env }, (err, stdout) =>
            err ? reject(err) : resolve(stdout),
          );
          child.stdin!.end(opts.input);
        });
      }
      return (await run('redis-cli', [...base, ...args], { env })).stdout;
    },
    async close() {
      for (const c of clients) c.disconnect();
      for (const a of agents.values()) a.direct.disconnect();
      await proxy.close();
      for (const a of agents.values()) {
        await a.agent.stop();
        await a.executor.stop();
      }
      router.stop();
      await gateway.stop();
      await Promise.all([principal.stop(), ...[...agents.values()].map((a) => a.redis.stop())]);
    },
  };
}

/**
 * The most one direction of a loopback connection can hold in kernel buffers: the sender's
 * send buffer and the receiver's receive buffer, each at the ceiling autotuning may grow it
 * to. Tests that need backpressure to reach a peer send more than this, so what the proxy
 * does past its own limits shows regardless of the machine's sysctls.
 */
export function kernelSocketBytes(): number {
  const ceiling = (path: string, fallback: number) => {
    try {
      return Number(readFileSync(path, 'latin1').trim().split(/\s+/)[2]) || fallback;
    } catch {
      return fallback;
    }
  };
  return (
    ceiling('/proc/sys/net/ipv4/tcp_rmem', 64 * 1024 * 1024) +
    ceiling('/proc/sys/net/ipv4/tcp_wmem', 64 * 1024 * 1024)
  );
}

/** Connections the proxy refused or closed for going over `limit` (its limit counter). */
export async function refusals(registry: Registry, limit: string): Promise<number> {
  const metric = registry.getSingleMetric('pullplane_redis_proxy_connections_refused_total');
  const values = (await metric!.get()).values;
  return values.find((v) => v.labels.limit === limit)?.value ?? 0;
}

/** Bytes the proxy holds for clients on one side (its buffer-budget gauge). */
export async function buffered(registry: Registry, side: 'request' | 'reply'): Promise<number> {
  const values = (await registry.getSingleMetric('pullplane_redis_proxy_buffered_bytes')!.get()).values;
  return values.find((v) => v.labels.side === side)?.value ?? 0;
}

/** Polls until `cond` holds; the test's own timeout is the only bound (no deadline of its own). */
export async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10)); // wait-ok: poll interval of a loop that waits for the event under a deadline
}

/**
 * What ends a raw exchange: `{ replies: n }` the n-th complete RESP reply (or the proxy closing
 * first), 'close' the proxy closing the connection, 'end' the proxy closing it after the test
 * half-closed its side (what a client that sent everything does; for input whose replies are
 * not known in advance).
 */
export type RawUntil = { replies: number } | 'close' | 'end';

/**
 * Writes raw bytes to the proxy and collects what it answers until `until` happened. Replies are
 * counted by decoding them with the project's RESP decoder, so a reply split across reads or a
 * late one is waited for, never mistaken for the end. The deadline is generous: it only turns a
 * missing event into a failure that says what did arrive.
 */
export async function rawExchange(
  port: number,
  input: Buffer | string,
  until: RawUntil,
  deadlineMs = 20_000,
): Promise<{ output: string; closed: boolean; replies: number }> {
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let replies = 0;
    let settled = false;
    const output = () => Buffer.concat(chunks).toString('latin1');
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      resolve({ output: output(), closed, replies });
    };
    const decoder = new RespDecoder({
      onValue: () => {
        replies++;
        if (typeof until === 'object' && replies === until.replies) finish(false);
      },
      onError: (err) => {
        if (settled) return;
        settled = true;
        socket.destroy();
        reject(
          new Error(
            `the proxy answered something that is not RESP (${err.message}): ${JSON.stringify(output())}`,
          ),
        );
      },
    });
    const deadline = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      const want = typeof until === 'object' ? `${until.replies} replies` : 'the proxy to close';
      reject(new Error(`waited ${deadlineMs} ms for ${want}; got ${replies}: ${JSON.stringify(output())}`));
    }, deadlineMs);
    const socket = connect({ host: '127.0.0.1', port }, () => {
      if (until === 'end') socket.end(input);
      else socket.write(input);
    });
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      decoder.push(d);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
  });
}
