import type { Tracer } from '@opentelemetry/api';
import {
  type AuthMethod,
  AuthMethodError,
  type HeaderAuthMethod,
  InMemoryDenyList,
  parseAuthMethod,
} from '@pullplane/auth';
import { followRevocations } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { isLoopback } from '@pullplane/names';
import {
  createProxyReplica,
  gatewayClientProblems,
  type ProxyReplica,
  type ProxyReplicaDeps,
} from '@pullplane/proxy-replica';
import { type CallerAuthOptions, createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import { kubeApiConfigured, tlsProtocolSettings } from '@pullplane/tls-material';
import type { resourceProxyOptions } from './options.js';
import { openProxyMaterial, type ProxyMaterial, proxyMaterialProblems } from './proxy-material.js';

export type ResourceProxyConfig = InferConfig<typeof resourceProxyOptions>;

/** `--auth` with the mesh presets pinned to the callers' trust domain and namespaces. */
export function callerAuthMethod(c: ResourceProxyConfig): AuthMethod {
  const mesh =
    c.meshTrustDomain && c.meshCallerNamespaces.length > 0
      ? { trustDomain: c.meshTrustDomain, namespaces: c.meshCallerNamespaces }
      : undefined;
  return parseAuthMethod(c.auth, { mesh });
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
  if (c.insecurePlaintext) {
    if (kind && kind !== 'header')
      problems.push('--insecure-plaintext requires a mesh identity header (--auth=header:…, istio, linkerd)');
    if (!isLoopback(c.listenHost) && !c.allowInsecureNonLoopback) {
      problems.push(
        `--insecure-plaintext on --listen-host=${c.listenHost} lets anyone who reaches the port forge identity headers; bind 127.0.0.1 or pass --allow-insecure-non-loopback`,
      );
    }
    if (c.allowedCallers.length === 0)
      problems.push('--allowed-callers must name who may use the proxy in mesh mode');
  } else {
    if (kind === 'header')
      problems.push('a mesh identity header is only trusted with --insecure-plaintext on loopback');
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
  problems.push(...gatewayClientProblems(c));
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
  if (c.insecurePlaintext && c.allowInsecureNonLoopback && !isLoopback(c.listenHost)) {
    warnings.push(
      '--insecure-plaintext on a non-loopback address: anyone who reaches the port can forge identity headers',
    );
  }
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
      // refused, and a revoked agent is unreachable whatever the credentials.
      const denyList = new InMemoryDenyList();
      const revokedAgents = new Set<string>();
      const stopRevocations = await followRevocations(bus, {
        agentRevoked(agent, reason) {
          if (revokedAgents.has(agent)) return;
          revokedAgents.add(agent);
          material?.cachedTokens?.forgetAgent(agent);
          logger.info({ agent, reason }, 'agent revoked; refusing requests for it');
        },
        tokenRevoked: (jti) => {
          denyList.deny({ kind: 'token', jti });
          material?.cachedTokens?.forgetToken(jti);
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
        ...(material.serverTls?.current
          ? {
              tls: {
                cert: material.serverTls.current.cert,
                key: material.serverTls.current.key,
                ...(material.clientCa?.current ? { ca: material.clientCa.current } : {}),
                ...(protocol ? { protocol } : {}),
              },
            }
          : {}),
        auth,
        requestTimeoutMs: c.requestTimeout,
        maxRequestBodyBytes: c.maxRequestBody,
        impersonators: c.impersonationAllowedCallers,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
      });
      const applyTls = () => {
        const pair = material.serverTls?.current;
        if (!pair) return;
        proxy.reloadTls({
          cert: pair.cert,
          key: pair.key,
          ...(material.clientCa?.current ? { ca: material.clientCa.current } : {}),
        });
      };
      material.serverTls?.onChange(applyTls);
      material.clientCa?.onChange(applyTls);
      const stopControl = bus.control.subscribe((ev) => {
        if (ev.type === 'config-reload' && (!ev.service || ev.service === 'resource-proxy')) {
          void material.reload().then(applyTls);
        }
      });
      reload = async () => {
        await material.reload();
        applyTls();
      };
      return {
        get port() {
          return proxy.port;
        },
        listen: () => proxy.listen(),
        reloadTls: (m: Parameters<ResourceProxy['reloadTls']>[0]) => proxy.reloadTls(m),
        async close(graceMs?: number) {
          stopRevocations();
          stopControl();
          material.stop();
          await proxy.close(graceMs);
        },
      };
    },
    () => ({ auth: c.auth, adoptArgocdAgentClusters: c.adoptArgocdAgentClusters }),
  );
  return Object.assign(replica, { reloadTls: async () => void (await reload?.()) });
}
