import { readFileSync } from 'node:fs';
import {
  type AuthMethod,
  AuthMethodError,
  CALLER_TOKEN_AUDIENCE,
  type HeaderAuthMethod,
  InMemoryDenyList,
  parseAuthMethod,
  TokenAuthority,
} from '@pullplane/auth';
import { followRevocations } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { type CallerAuthOptions, createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import { createProxyReplica, type ProxyReplica, type ProxyReplicaDeps } from '@pullplane/router';
import type { resourceProxyOptions } from './options.js';

export type ResourceProxyConfig = InferConfig<typeof resourceProxyOptions>;

const isLoopback = (h: string) => h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);

/** `--auth` with the mesh presets pinned to the callers' trust domain and namespaces. */
export function callerAuthMethod(c: ResourceProxyConfig): AuthMethod {
  const mesh =
    c.meshTrustDomain && c.meshCallerNamespaces.length > 0
      ? { trustDomain: c.meshTrustDomain, namespaces: c.meshCallerNamespaces }
      : undefined;
  return parseAuthMethod(c.auth, { mesh });
}

export function validateResourceProxyConfig(c: ResourceProxyConfig): string[] {
  if (!c.enableResourceProxy) return [];
  const problems: string[] = [];
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
    if (!c.resourceProxyCertPath || !c.resourceProxyKeyPath) {
      problems.push(
        'TLS needs --resource-proxy-cert-path and --resource-proxy-key-path (or --insecure-plaintext behind a mesh)',
      );
    }
    if (kind === 'header')
      problems.push('a mesh identity header is only trusted with --insecure-plaintext on loopback');
    if (kind === 'mtls' && !c.resourceProxyCaPath && !c.tokenKeyPath) {
      problems.push(
        'callers need a way in: --resource-proxy-ca-path (client certificates) and/or --token-key-path (tokens)',
      );
    }
  }
  if (!c.gatewayPlaintext && (!c.gatewayCertPath || !c.gatewayKeyPath)) {
    problems.push(
      'reaching gateways needs --gateway-cert-path and --gateway-key-path (or --gateway-plaintext behind a mesh)',
    );
  }
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

export type ResourceProxyAppDeps = Omit<ProxyReplicaDeps, 'name'>;

export type ResourceProxyApp = ProxyReplica<ResourceProxy>;

/** Builds the resource proxy service, unstarted. */
export function createResourceProxyApp(c: ResourceProxyConfig, deps: ResourceProxyAppDeps): ResourceProxyApp {
  const { logger, registry } = deps;
  return createProxyReplica(
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
          logger.info({ agent, reason }, 'agent revoked; refusing requests for it');
        },
        tokenRevoked: (jti) => denyList.deny({ kind: 'token', jti }),
      });
      const auth: CallerAuthOptions = {
        ...(c.tokenKeyPath
          ? {
              tokens: await TokenAuthority.fromFile(c.tokenKeyPath, {
                audience: CALLER_TOKEN_AUDIENCE,
                denyList,
              }),
            }
          : {}),
        ...(method.kind === 'header'
          ? { meshIdentity: { method: method as HeaderAuthMethod, allowed: c.allowedCallers } }
          : {}),
        isRevoked: (agent) => revokedAgents.has(agent),
      };
      const proxy = createResourceProxy({
        router,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(c.insecurePlaintext || !c.resourceProxyCertPath || !c.resourceProxyKeyPath
          ? {}
          : {
              tls: {
                cert: readFileSync(c.resourceProxyCertPath),
                key: readFileSync(c.resourceProxyKeyPath),
                ...(c.resourceProxyCaPath ? { ca: readFileSync(c.resourceProxyCaPath) } : {}),
              },
            }),
        auth,
        requestTimeoutMs: c.requestTimeout,
        maxRequestBodyBytes: c.maxRequestBody,
        impersonators: c.impersonationAllowedCallers,
      });
      return {
        get port() {
          return proxy.port;
        },
        listen: () => proxy.listen(),
        async close(graceMs?: number) {
          stopRevocations();
          await proxy.close(graceMs);
        },
      };
    },
    () => ({ auth: c.auth }),
  );
}
