import { natsSecurityProblems, onConfigReload } from '@pullplane/bus';
import {
  createProxyReplica,
  gatewayClientProblems,
  type ProxyReplica,
  type ProxyReplicaDeps,
} from '@pullplane/proxy-replica';
import type { Service } from '@pullplane/service';
import { currentListenerTls, followListenerMaterial, tlsProtocolSettings } from '@pullplane/tls-material';
import { validateAllowedCommands } from './commands/table.js';
import { validateKeyPrefixes } from './key-routing.js';
import { createRedisProxy, type RedisProxy } from './redis-proxy.js';
import {
  callerCertificatesOnly,
  listenerTlsSource,
  openRedisProxyMaterial,
  redisPassword,
  redisProxyMaterialProblems,
} from './redis-proxy-material.js';
import type { RedisProxyServiceConfig } from './redis-proxy-options.js';

/** Cross-field rules, reported with every other configuration problem; none when it is switched off. */
export function validateRedisProxyConfig(
  c: RedisProxyServiceConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  if (c.disableRedisProxy) return [];
  const problems = validateKeyPrefixes(c.agentKeyPrefixes).map((p) => `--agent-key-prefixes: ${p}`);
  problems.push(...validateAllowedCommands(c.allowCommands).map((p) => `--allow-commands: ${p}`));
  if (c.maxBulkLength > c.maxCommandBytes) problems.push('--max-bulk-length exceeds --max-command-bytes');
  if (c.maxCommandBytes > c.maxClientInputBytes)
    problems.push('--max-command-bytes exceeds --max-client-input-bytes');
  if (c.maxCommandBytes > c.maxBufferedBytes)
    problems.push('--max-command-bytes exceeds --max-buffered-bytes');
  if ((c.tlsCertPath === undefined) !== (c.tlsKeyPath === undefined))
    problems.push('--tls-cert-path and --tls-key-path go together');
  // argocd-agent's params carry --redis-ca-path (a mount path) whether or not TLS is on; it
  // is read, and must exist, only with --redis-tls.
  problems.push(...redisProxyMaterialProblems(c, env));
  if (listenerTlsSource(c)) problems.push(...tlsProtocolSettings(c).problems);
  problems.push(...gatewayClientProblems(c), ...natsSecurityProblems(c));
  return problems;
}

export type RedisProxyServiceDeps = Omit<ProxyReplicaDeps, 'name'>;

export type RedisProxyService = ProxyReplica<RedisProxy> &
  Service & {
    /** Re-reads TLS material from files and Secrets (SIGHUP; Secrets are also watched). */
    reloadTls(): Promise<void>;
  };

/**
 * The redis proxy as a service, unstarted: a proxy replica (ops, presence bus, router to the
 * gateways) serving RESP, with its listener certificate and client CA followed, the principal
 * Redis' CA and password, and its limits.
 */
export function createRedisProxyService(
  c: RedisProxyServiceConfig,
  deps: RedisProxyServiceDeps,
): RedisProxyService {
  const { logger, registry } = deps;
  const protocol = tlsProtocolSettings(c).settings;
  const password = redisPassword(c);
  let reload: (() => Promise<void>) | undefined;
  const replica = createProxyReplica(
    c,
    { ...deps, name: 'redis-proxy' },
    async (router, bus) => {
      const material = await openRedisProxyMaterial(c, logger);
      material.observe(registry, 'redis-proxy');
      // New connections to the principal Redis read the CA from here: a rotation applies to them.
      const principalTls: { ca?: Buffer; insecure?: boolean } = {
        ...(material.redisCa?.current ? { ca: material.redisCa.current } : {}),
        ...(c.redisTlsInsecure ? { insecure: true } : {}),
      };
      material.redisCa?.onChange((ca) => {
        principalTls.ca = ca;
      });
      const redisTls = c.redisTls ? { tls: principalTls } : {};
      const listener = {
        pair: material.listener,
        clientCa: material.clientCa,
        reload: () => material.reload(),
      };
      const listenerTls = currentListenerTls(listener);
      const proxy = createRedisProxy({
        router,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(listenerTls
          ? {
              tls: {
                ...listenerTls,
                ...(protocol ? { protocol } : {}),
                authorizeClient: callerCertificatesOnly,
              },
            }
          : {}),
        principal: {
          host: c.redisServerAddress.host,
          port: c.redisServerAddress.port,
          ...(password ? { password } : {}),
          ...redisTls,
        },
        ...(password ? { password } : {}),
        agentKeyPrefixes: c.agentKeyPrefixes,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
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
      const followed = followListenerMaterial(listener, {
        logger,
        reloadOn: (request) => onConfigReload(bus, 'redis-proxy', request),
        apply: (tls) => proxy.reloadTls(tls),
      });
      reload = followed.reload;
      const close = proxy.close.bind(proxy);
      return Object.assign(proxy, {
        async close(graceMs?: number) {
          followed.stop();
          material.stop();
          await close(graceMs);
        },
      });
    },
    () => ({
      principal: `${c.redisServerAddress.host}:${c.redisServerAddress.port}`,
      prefixes: c.agentKeyPrefixes,
      auth: password ? 'password' : 'none',
      tls: listenerTlsSource(c) ?? false,
      principalTls: c.redisTls,
      allowCommands: c.allowCommands,
    }),
  );
  const reloadTls = async () => void (await reload?.());
  return Object.assign(replica, { reloadTls, reload: reloadTls });
}
