import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, RedisExecutor } from '@pullplane/agent-core';
import { parseAuthMethod } from '@pullplane/auth';
import { type Bus, connectNatsBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { type AgentLimits, agentAuthenticator, Gateway, internalAuthenticator } from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  createRedisProxyService,
  type RedisProxyService,
  validateRedisProxyConfig,
} from '@pullplane/redis-proxy';
import {
  createTestPki,
  type NatsServerHandle,
  type RedisServerHandle,
  startNatsServer,
  startRedisServer,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { redisProxyOptions } from '../src/options.js';

export const PRINCIPAL_PASSWORD = 'argocd-redis-pw';

/**
 * The agent-key path as it runs: a real nats-server; a gateway holding agent-a's tunnel with an
 * mTLS internal listener; `replicas` redis-proxy services, each with its own NATS connection,
 * reaching that gateway over the network; real redis-servers for the principal and the agent.
 */
export interface AgentPath {
  nats: NatsServerHandle;
  gateway: Gateway;
  gatewayRegistry: Registry;
  principal: RedisServerHandle;
  agentRedis: RedisServerHandle;
  /** A client of the agent's Redis itself, for what the proxy should have written or read. */
  agentDirect: Redis;
  agent: Agent;
  replicas: RedisProxyService[];
  registries: Registry[];
  stop(): Promise<void>;
}

export async function startAgentPath(o: {
  logger: Logger;
  replicas: number;
  requestTimeout: string;
  agentLimits?: Partial<AgentLimits>;
}): Promise<AgentPath> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-proxy-'));
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const nats = await startNatsServer();
  const principal = await startRedisServer({ password: PRINCIPAL_PASSWORD });
  const agentRedis = await startRedisServer();
  const agentDirect = new Redis({ host: agentRedis.host, port: agentRedis.port });
  const pki = await createTestPki();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const tls = { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem };
  const gatewayBus: Bus = await connectNatsBus({ servers: [nats.url], name: 'gateway' });
  const internal = internalAuthenticator(parseAuthMethod('mtls'), ['redis-proxy']);
  const gatewayRegistry = new Registry();
  const gateway = new Gateway({
    bus: gatewayBus,
    logger: o.logger,
    registry: gatewayRegistry,
    ...(o.agentLimits ? { agentLimits: o.agentLimits } : {}),
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
  const executor = new RedisExecutor({
    agentName: 'agent-a',
    endpoint: { host: agentRedis.host, port: agentRedis.port },
    logger: o.logger,
  });
  const agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(
      Buffer.from(pki.ca.certPem),
      Buffer.from(agentCert.keyPem),
      Buffer.from(agentCert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    enableResourceProxy: false,
    logger: o.logger,
    handlers: { redis: (s) => executor.handle(s) },
  });
  agent.start();

  const proxyCert = await pki.proxyCert('redis-proxy');
  const replicas: RedisProxyService[] = [];
  const registries: Registry[] = [];
  for (let i = 0; i < o.replicas; i++) {
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
        `--request-timeout=${o.requestTimeout}`,
      ],
      env: { REDIS_PASSWORD: PRINCIPAL_PASSWORD },
      validate: (c) => validateRedisProxyConfig(c, { REDIS_PASSWORD: PRINCIPAL_PASSWORD }),
    });
    const registry = new Registry();
    registries.push(registry);
    const app = createRedisProxyService(config, { logger: o.logger, registry });
    await app.start();
    replicas.push(app);
  }
  const deadline = Date.now() + 15_000;
  while (!replicas.every((r) => r.router!.lookup('agent-a') !== undefined)) {
    if (Date.now() > deadline) throw new Error('agent-a never showed up in presence');
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
  return {
    nats,
    gateway,
    gatewayRegistry,
    principal,
    agentRedis,
    agentDirect,
    agent,
    replicas,
    registries,
    async stop() {
      agentDirect.disconnect();
      for (const r of replicas) await r.stop();
      await agent.stop();
      await executor.stop();
      await gateway.stop();
      await gatewayBus.close();
      await Promise.all([nats.stop(), principal.stop(), agentRedis.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The sum of a metric's values (every label set) in `registry`. */
export async function metricValue(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return m?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
}
