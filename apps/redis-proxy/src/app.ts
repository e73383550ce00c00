import { readFileSync } from 'node:fs';
import type { InferConfig } from '@pullplane/config';
import {
  createRedisProxy,
  type RedisProxy,
  validateAllowedCommands,
  validateKeyPrefixes,
} from '@pullplane/redis-proxy';
import { createProxyReplica, type ProxyReplica, type ProxyReplicaDeps } from '@pullplane/router';
import type { redisProxyOptions } from './options.js';

export type RedisProxyConfig = InferConfig<typeof redisProxyOptions>;

export function validateRedisProxyConfig(c: RedisProxyConfig): string[] {
  const problems = validateKeyPrefixes(c.agentKeyPrefixes).map((p) => `--agent-key-prefixes: ${p}`);
  problems.push(...validateAllowedCommands(c.allowCommands).map((p) => `--allow-commands: ${p}`));
  if (c.maxBulkLength > c.maxCommandBytes) problems.push('--max-bulk-length exceeds --max-command-bytes');
  if (c.maxCommandBytes > c.maxClientInputBytes)
    problems.push('--max-command-bytes exceeds --max-client-input-bytes');
  if (c.maxCommandBytes > c.maxBufferedBytes)
    problems.push('--max-command-bytes exceeds --max-buffered-bytes');
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

export type RedisProxyAppDeps = Omit<ProxyReplicaDeps, 'name'>;

export type RedisProxyApp = ProxyReplica<RedisProxy>;

/** Builds the redis proxy service, unstarted. */
export function createRedisProxyApp(c: RedisProxyConfig, deps: RedisProxyAppDeps): RedisProxyApp {
  const { logger, registry } = deps;
  return createProxyReplica(
    c,
    { ...deps, name: 'redis-proxy' },
    async (router) => {
      const redisTls = c.redisTls
        ? {
            tls: {
              ...(c.redisCaPath ? { ca: readFileSync(c.redisCaPath) } : {}),
              ...(c.redisTlsInsecure ? { insecure: true } : {}),
            },
          }
        : {};
      const proxy = createRedisProxy({
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
        limits: {
          maxUnauthenticatedArgs: c.maxUnauthenticatedArgs,
          maxUnauthenticatedBytes: c.maxUnauthenticatedBytes,
          unauthenticatedTimeoutMs: c.unauthenticatedTimeout,
          maxCommandArgs: c.maxCommandArgs,
          maxBulkLength: c.maxBulkLength,
          maxCommandBytes: c.maxCommandBytes,
          maxClientInputBytes: c.maxClientInputBytes,
          maxOutputBytes: c.maxClientOutputBytes,
          maxBufferedBytes: c.maxBufferedBytes,
        },
        maxClients: c.maxClients,
        allowCommands: c.allowCommands,
      });
      return proxy;
    },
    () => ({
      principal: `${c.redisServerAddress.host}:${c.redisServerAddress.port}`,
      prefixes: c.agentKeyPrefixes,
      auth: c.redisPassword ? 'password' : 'none',
      tls: c.tlsCertPath !== undefined,
      allowCommands: c.allowCommands,
    }),
  );
}
