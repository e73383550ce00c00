import { readFileSync } from 'node:fs';
import type { Tracer } from '@opentelemetry/api';
import {
  AuthMethodError,
  type HeaderAuthMethod,
  InMemoryDenyList,
  OpenExchanges,
  parseAuthMethod,
  plaintextListenerProblems,
  TokenAuthority,
} from '@pullplane/auth';
import { followRevocations, natsSecurityProblems, onConfigReload } from '@pullplane/bus';
import { createExtensionProxy, type ExtensionProxy } from '@pullplane/extension-proxy';
import {
  createProxyReplica,
  gatewayClientProblems,
  type ProxyReplica,
  type ProxyReplicaDeps,
} from '@pullplane/proxy-replica';
import { currentListenerTls, followListenerMaterial, tlsProtocolSettings } from '@pullplane/tls-material';
import type { ExtensionProxyConfig } from './options.js';
import { openProxyMaterial, proxyMaterialProblems } from './proxy-material.js';

/** Audience of the bearer tokens the Argo CD server presents (`pullplane extensions token`). */
export const EXTENSION_PROXY_AUDIENCE = 'extension-proxy';

function callerAuthMethod(c: ExtensionProxyConfig) {
  const mesh =
    c.meshTrustDomain && c.meshCallerNamespaces.length > 0
      ? { trustDomain: c.meshTrustDomain, namespaces: c.meshCallerNamespaces }
      : undefined;
  return parseAuthMethod(c.auth, { mesh });
}

export function validateExtensionProxyConfig(
  c: ExtensionProxyConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const problems: string[] = [...tlsProtocolSettings(c).problems, ...proxyMaterialProblems(c, env)];
  let kind: string | undefined;
  try {
    kind = callerAuthMethod(c).kind;
  } catch (err) {
    problems.push(
      err instanceof AuthMethodError && err.code === 'AUTH_METHOD_MESH_UNPINNED'
        ? `--auth=${c.auth} must be pinned: set --mesh-trust-domain and --mesh-caller-namespaces (${err.message})`
        : `--auth: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (kind && kind !== 'mtls' && kind !== 'header')
    problems.push(
      `--auth=${c.auth}: the extension proxy recognises the Argo CD server by mtls or a mesh identity`,
    );
  problems.push(
    ...plaintextListenerProblems({
      insecurePlaintext: c.insecurePlaintext,
      allowInsecureNonLoopback: c.allowInsecureNonLoopback,
      listeners: [{ flag: 'listen-host', host: c.listenHost }],
      ...(kind ? { callerMethod: { flag: 'auth', kind } } : {}),
    }),
  );
  if (c.allowedCallers.length === 0) problems.push('--allowed-callers must name the Argo CD server');
  for (const u of c.resourceProxyUrl) {
    try {
      new URL(u);
    } catch {
      problems.push(`--resource-proxy-url: ${u} is not a URL`);
    }
  }
  problems.push(...gatewayClientProblems(c), ...natsSecurityProblems(c));
  return problems;
}

export type ExtensionProxyAppDeps = Omit<ProxyReplicaDeps, 'name'> & {
  /** Set when traces are exported (`--otlp-address`). */
  tracer?: Tracer | undefined;
};

export type ExtensionProxyApp = ProxyReplica<ExtensionProxy> & {
  /** Re-reads TLS material from files and Secrets (SIGHUP; Secrets are also watched). */
  reloadTls(): Promise<void>;
  /** SIGHUP: `reloadTls`. */
  reload(): Promise<void>;
};

/** Builds the extension proxy service, unstarted. */
export function createExtensionProxyApp(
  c: ExtensionProxyConfig,
  deps: ExtensionProxyAppDeps,
): ExtensionProxyApp {
  const { logger, registry } = deps;
  const protocol = tlsProtocolSettings(c).settings;
  let reload: (() => Promise<void>) | undefined;
  const replica = createProxyReplica(
    c,
    { ...deps, name: 'extension-proxy' },
    async (router, bus) => {
      const method = callerAuthMethod(c);
      // Revocations from the bus, as the resource proxy follows them: a revoked token (by jti)
      // is refused from the next request on, a revoked agent is unreachable, and what either
      // had open (event streams, WebSockets) ends at once.
      const denyList = new InMemoryDenyList();
      const revoked = new Set<string>();
      const openExchanges = new OpenExchanges();
      const stopRevocations = await followRevocations(bus, {
        agentRevoked(agent, reason) {
          const ended = openExchanges.endAgent(agent, `agent ${agent} revoked: ${reason}`);
          if (ended > 0) logger.info({ agent, reason, ended }, 'ended open requests to a revoked agent');
          if (revoked.has(agent)) return;
          revoked.add(agent);
          logger.info({ agent, reason }, 'agent revoked; refusing requests for it');
        },
        tokenRevoked: (jti) => {
          denyList.deny({ kind: 'token', jti });
          const ended = openExchanges.endToken(jti, `caller token ${jti} revoked`);
          if (ended > 0) logger.info({ jti, ended }, 'ended open requests of a revoked caller token');
        },
      });
      const material = await openProxyMaterial(c, logger);
      const tokens = c.tokenKeyPath
        ? await TokenAuthority.fromPem(readFileSync(c.tokenKeyPath, 'utf8'), {
            audience: EXTENSION_PROXY_AUDIENCE,
            denyList,
          })
        : undefined;
      if (!c.insecurePlaintext && material.clientCa?.current === undefined && !tokens)
        logger.warn(
          `no CA for client certificates (--client-ca-path, Secret ${c.clientCaSecretName}) and no --token-key-path: every caller is refused until a CA appears`,
        );
      const listener = {
        pair: material.serverTls,
        clientCa: material.clientCa,
        reload: () => material.reload(),
      };
      const listenerTls = currentListenerTls(listener);
      const proxy = createExtensionProxy({
        router,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(listenerTls ? { tls: { ...listenerTls, ...(protocol ? { protocol } : {}) } } : {}),
        auth: {
          allowed: c.allowedCallers,
          ...(method.kind === 'header' ? { meshIdentity: method as HeaderAuthMethod } : {}),
          ...(tokens ? { tokens } : {}),
        },
        clusterUrlBases: c.resourceProxyUrl,
        requestTimeoutMs: c.requestTimeout,
        maxRequestBodyBytes: c.maxRequestBody,
        isRevoked: (agent) => revoked.has(agent),
        isKnownAgent: (agent) => router.lookup(agent) !== undefined,
        openExchanges,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
      });
      const followed = followListenerMaterial(listener, {
        logger,
        reloadOn: (reload) => onConfigReload(bus, 'extension-proxy', reload),
        apply: (tls) => proxy.reloadTls(tls),
      });
      reload = followed.reload;
      return {
        get port() {
          return proxy.port;
        },
        listen: () => proxy.listen(),
        reloadTls: proxy.reloadTls,
        async close(graceMs?: number) {
          stopRevocations();
          followed.stop();
          material.stop();
          await proxy.close(graceMs);
        },
      };
    },
    () => ({ auth: c.auth, resourceProxyUrls: c.resourceProxyUrl }),
  );
  const reloadTls = async () => void (await reload?.());
  return Object.assign(replica, { reloadTls, reload: reloadTls });
}
