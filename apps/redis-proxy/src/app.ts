import { readFileSync } from 'node:fs';
import { type Bus, connectBusFromFlags } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { createRedisProxy, type RedisProxy, validateKeyPrefixes } from '@pullplane/redis-proxy';
import { type AgentRouter, startRouterFromFlags } from '@pullplane/router';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { redisProxyOptions } from './options.js';

export type RedisProxyConfig = InferConfig<typeof redisProxyOptions>;

export function validateRedisProxyConfig(c: RedisProxyConfig): string[] {
  const problems = validateKeyPrefixes(c.agentKeyPrefixes).map((p) => `--agent-key-prefixes: ${p}`);
  if ((c.tlsCertPath === undefined) !== (c.tlsKeyPath === undefined))
    problems.push('--tls-cert-path and --tls-key-path go together');
  if (c.tlsClientCaPath && !c.tlsCertPath)
    problems.push('--tls-client-ca-path needs --tls-cert-path and --tls-key-path');
  if ((c.redisCaPath || c.redisTlsInsecure) && !c.redisTls)
    problems.push('--redis-ca-path and --redis-tls-insecure need --redis-tls');
  if (!c.gatewayPlaintext && (!c.gatewayCertPath || !c.gatewayKeyPath)) {
    problems.push(
      'reaching gateways needs --gateway-cert-path and --gateway-key-path (or --gateway-plaintext behind a mesh)',
    );
  }
  return problems;
}

export interface RedisProxyAppDeps {
  logger: Logger;
  registry: Registry;
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus;
}

export interface RedisProxyApp {
  readonly ops: OpsServer;
  readonly proxy: RedisProxy | undefined;
  readonly router: AgentRouter | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the redis proxy service, unstarted. */
export function createRedisProxyApp(c: RedisProxyConfig, deps: RedisProxyAppDeps): RedisProxyApp {
  const { logger, registry } = deps;
  const ops = createOpsServer({
    host: '0.0.0.0',
    healthzPort: c.healthzPort,
    metricsPort: c.metricsPort,
    registry,
    logger,
  });
  let bus = deps.bus;
  let router: AgentRouter | undefined;
  let proxy: RedisProxy | undefined;
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));
  ops.addReadinessCheck('listener', () => (proxy ? true : 'not listening yet'));
  return {
    ops,
    get proxy() {
      return proxy;
    },
    get router() {
      return router;
    },
    async start() {
      await ops.listen();
      bus ??= await connectBusFromFlags(c, { name: 'redis-proxy', logger });
      router = await startRouterFromFlags(c, { bus, logger });
      const redisTls = c.redisTls
        ? {
            tls: {
              ...(c.redisCaPath ? { ca: readFileSync(c.redisCaPath) } : {}),
              ...(c.redisTlsInsecure ? { insecure: true } : {}),
            },
          }
        : {};
      proxy = createRedisProxy({
        router,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(c.tlsCertPath && c.tlsKeyPath
          ? {
              tls: {
                cert: readFileSync(c.tlsCertPath),
                key: readFileSync(c.tlsKeyPath),
                ...(c.tlsClientCaPath ? { ca: readFileSync(c.tlsClientCaPath) } : {}),
              },
            }
          : {}),
        principal: {
          host: c.redisServerAddress.host,
          port: c.redisServerAddress.port,
          ...(c.redisPassword ? { password: c.redisPassword } : {}),
          ...redisTls,
        },
        ...(c.redisPassword ? { password: c.redisPassword } : {}),
        agentKeyPrefixes: c.agentKeyPrefixes,
        requestTimeoutMs: c.requestTimeout,
        limits: { maxBulkLength: c.maxBulkLength },
        maxClients: c.maxClients,
      });
      await proxy.listen();
      logger.info(
        {
          port: proxy.port,
          principal: `${c.redisServerAddress.host}:${c.redisServerAddress.port}`,
          prefixes: c.agentKeyPrefixes,
          auth: c.redisPassword ? 'password' : 'none',
        },
        'redis proxy started',
      );
    },
    async stop() {
      ops.markShuttingDown();
      await proxy?.close(c.drainTimeout);
      router?.stop();
      if (!deps.bus) await bus?.close();
      await ops.close();
    },
  };
}
