import type { Tracer } from '@opentelemetry/api';
import {
  type AuthMethod,
  AuthMethodError,
  type HeaderAuthMethod,
  InMemoryDenyList,
  OpenExchanges,
  type PlaintextListenerSettings,
  parseAuthMethod,
  plaintextListenerProblems,
  plaintextListenerWarnings,
} from '@pullplane/auth';
import { followRevocations, natsSecurityProblems, onConfigReload } from '@pullplane/bus';
import {
  createProxyReplica,
  gatewayClientProblems,
  type ProxyReplica,
  type ProxyReplicaDeps,
} from '@pullplane/proxy-replica';
import { type CallerAuthOptions, createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import {
  currentListenerTls,
  followListenerMaterial,
  kubeApiConfigured,
  tlsProtocolSettings,
} from '@pullplane/tls-material';
import type { ResourceProxyConfig } from './options.js';
import { openProxyMaterial, type ProxyMaterial, proxyMaterialProblems } from './proxy-material.js';

/** `--auth` with the mesh presets pinned to the callers' trust domain and namespaces. */
export function callerAuthMethod(c: ResourceProxyConfig): AuthMethod {
  const mesh =
    c.meshTrustDomain && c.meshCallerNamespaces.length > 0
      ? { trustDomain: c.meshTrustDomain, namespaces: c.meshCallerNamespaces }
      : undefined;
  return parseAuthMethod(c.auth, { mesh });
}

function plaintextSettings(c: ResourceProxyConfig, kind?: string): PlaintextListenerSettings {
  return {
    insecurePlaintext: c.insecurePlaintext,
    allowInsecureNonLoopback: c.allowInsecureNonLoopback,
    listeners: [{ flag: 'listen-host', host: c.listenHost }],
    ...(kind ? { callerMethod: { flag: 'auth', kind } } : {}),
  };
}

export function validateResourceProxyConfig(
  c: ResourceProxyConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  if (!c.enableResourceProxy) return [];
  const problems: string[] = [...tlsProtocolSettings(c).problems, ...proxyMaterialProblems(c, env)];
  let kind: string | undefined;
  try {
    kind = callerAuthMethod(c).kind;
  } catch (err) {
    if (err instanceof AuthMethodError && err.code === 'AUTH_METHOD_MESH_UNPINNED') {
      problems.push(
        `--auth=${c.auth} admits any workload whose service account has an allowed name unless it is pinned: set --mesh-trust-domain and --mesh-caller-namespaces (${err.message}), or give an explicit --auth=header:<name>:<regex>`,
      );
    } else {
      problems.push(`--auth: ${err instanceof AuthMethodError ? err.message : String(err)}`);
    }
  }
  if (kind === 'token')
    problems.push('--auth=token is not a caller method here: set --token-key-path with --auth=mtls');
  problems.push(...plaintextListenerProblems(plaintextSettings(c, kind)));
  if (c.insecurePlaintext) {
    if (c.allowedCallers.length === 0)
      problems.push('--allowed-callers must name who may use the proxy in mesh mode');
  } else {
    if (
      kind === 'mtls' &&
      !c.resourceProxyCaPath &&
      !c.tokenKeyPath &&
      !kubeApiConfigured({ kubeconfig: c.kubeconfig }, env)
    ) {
      problems.push(
        `callers need a way in: --resource-proxy-ca-path (client certificates) and/or --token-key-path (tokens), or the Secrets ${c.resourceProxyCaSecretName} and ${c.jwtSecretName} through a Kubernetes API`,
      );
    }
  }
  problems.push(...gatewayClientProblems(c), ...natsSecurityProblems(c));
  return problems;
}

/** A probe identity no real mesh issues: a header pattern that accepts it is not pinned. */
const UNPINNED_PROBES: Record<string, string> = {
  'x-forwarded-client-cert': 'URI=spiffe://pullplane-probe.invalid/ns/pullplane-probe/sa/probe-caller',
  'l5d-client-id': 'probe-caller.pullplane-probe.serviceaccount.identity.linkerd.pullplane-probe.invalid',
};

/** What an operator should know about a configuration that is accepted but weaker than it could be. */
export function resourceProxyStartupWarnings(c: ResourceProxyConfig): string[] {
  const warnings: string[] = [];
  if (c.adoptArgocdAgentClusters) {
    warnings.push(
      "--adopt-argocd-agent-clusters: argocd-agent's cluster-Secret tokens never expire; revoke one by its jti (`pullplane revoke`) or rotate the JWT key once every Secret has been adopted",
    );
  }
  warnings.push(...plaintextListenerWarnings(plaintextSettings(c)));
  if (c.auth.startsWith('header:')) {
    try {
      const method = parseAuthMethod(c.auth);
      const probe = method.kind === 'header' ? UNPINNED_PROBES[method.header] : undefined;
      if (method.kind === 'header' && probe && method.pattern.test(probe)) {
        warnings.push(
          `--auth=${c.auth} accepts identities from any trust domain and namespace; prefer the preset with --mesh-trust-domain and --mesh-caller-namespaces`,
        );
      }
    } catch {
      // Reported by validation.
    }
  }
  return warnings;
}

export type ResourceProxyAppDeps = Omit<ProxyReplicaDeps, 'name'> & {
  /** Set when traces are exported (`--otlp-address`). */
  tracer?: Tracer | undefined;
};

export type ResourceProxyApp = ProxyReplica<ResourceProxy> & {
  /** Re-reads TLS material and keys from files and Secrets (SIGHUP; Secrets are also watched). */
  reloadTls(): Promise<void>;
  /** SIGHUP: `reloadTls`. */
  reload(): Promise<void>;
};

/** Builds the resource proxy service, unstarted. */
export function createResourceProxyApp(c: ResourceProxyConfig, deps: ResourceProxyAppDeps): ResourceProxyApp {
  const { logger, registry } = deps;
  const protocol = tlsProtocolSettings(c).settings;
  let reload: (() => Promise<void>) | undefined;
  const replica = createProxyReplica(
    c,
    { ...deps, name: 'resource-proxy' },
    async (router, bus) => {
      const method = callerAuthMethod(c);
      // Revocations from the bus, as the gateways get them: revoked tokens (by jti) are
      // refused, and a revoked agent is unreachable whatever the credentials; what either had
      // open (watches, logs -f) ends at once.
      const denyList = new InMemoryDenyList();
      const revokedAgents = new Set<string>();
      const openExchanges = new OpenExchanges();
      const stopRevocations = await followRevocations(bus, {
        agentRevoked(agent, reason) {
          const ended = openExchanges.endAgent(agent, `agent ${agent} revoked: ${reason}`);
          if (ended > 0) logger.info({ agent, reason, ended }, 'ended open requests to a revoked agent');
          if (revokedAgents.has(agent)) return;
          revokedAgents.add(agent);
          material?.cachedTokens?.forgetAgent(agent);
          logger.info({ agent, reason }, 'agent revoked; refusing requests for it');
        },
        tokenRevoked: (jti) => {
          denyList.deny({ kind: 'token', jti });
          material?.cachedTokens?.forgetToken(jti);
          const ended = openExchanges.endToken(jti, `caller token ${jti} revoked`);
          if (ended > 0) logger.info({ jti, ended }, 'ended open requests of a revoked caller token');
        },
      });
      let material: ProxyMaterial | undefined;
      material = await openProxyMaterial(c, method.kind === 'header', denyList, logger);
      if (
        method.kind === 'mtls' &&
        material.clientCa?.current === undefined &&
        material.tokens?.ready !== true &&
        !c.insecurePlaintext
      ) {
        material.stop();
        stopRevocations();
        throw new Error(
          `callers have no way in: neither a caller CA (--resource-proxy-ca-path, Secret ${c.resourceProxyCaSecretName}) nor a token key (--token-key-path, Secret ${c.jwtSecretName}) is available`,
        );
      }
      const listener = {
        pair: material.serverTls,
        clientCa: material.clientCa,
        reload: () => material.reload(),
      };
      const listenerTls = currentListenerTls(listener);
      const auth: CallerAuthOptions = {
        ...(material.cachedTokens ? { tokens: material.cachedTokens } : {}),
        ...(method.kind === 'header'
          ? { meshIdentity: { method: method as HeaderAuthMethod, allowed: c.allowedCallers } }
          : {}),
        isRevoked: (agent) => revokedAgents.has(agent),
      };
      const proxy = createResourceProxy({
        router,
        isKnownAgent: (agent) => router.lookup(agent) !== undefined,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(listenerTls ? { tls: { ...listenerTls, ...(protocol ? { protocol } : {}) } } : {}),
        auth,
        requestTimeoutMs: c.requestTimeout,
        maxRequestBodyBytes: c.maxRequestBody,
        impersonators: c.impersonationAllowedCallers,
        openExchanges,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
      });
      const followed = followListenerMaterial(listener, {
        logger,
        reloadOn: (reload) => onConfigReload(bus, 'resource-proxy', reload),
        apply: (tls) => proxy.reloadTls(tls),
      });
      reload = followed.reload;
      return {
        get port() {
          return proxy.port;
        },
        listen: () => proxy.listen(),
        reloadTls: (m: Parameters<ResourceProxy['reloadTls']>[0]) => proxy.reloadTls(m),
        async close(graceMs?: number) {
          stopRevocations();
          followed.stop();
          material.stop();
          await proxy.close(graceMs);
        },
      };
    },
    () => ({ auth: c.auth, adoptArgocdAgentClusters: c.adoptArgocdAgentClusters }),
  );
  const reloadTls = async () => void (await reload?.());
  return Object.assign(replica, { reloadTls, reload: reloadTls });
}
