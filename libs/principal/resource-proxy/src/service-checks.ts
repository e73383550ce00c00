import {
  AuthMethodError,
  type PlaintextListenerSettings,
  parseAuthMethod,
  parseCallerAuthMethod,
  plaintextListenerProblems,
  plaintextListenerWarnings,
} from '@pullplane/auth';
import { gatewayClientProblems } from '@pullplane/proxy-replica';
import { kubeApiConfigured, tlsProtocolSettings } from '@pullplane/tls-material';
import { proxyMaterialProblems } from './proxy-material.js';
import type { ResourceProxyServiceFlags } from './service-options.js';

function plaintextSettings(c: ResourceProxyServiceFlags, kind?: string): PlaintextListenerSettings {
  return {
    insecurePlaintext: c.insecurePlaintext,
    allowInsecureNonLoopback: c.allowInsecureNonLoopback,
    listeners: [{ flag: 'listen-host', host: c.listenHost }],
    ...(kind ? { callerMethod: { flag: 'auth', kind } } : {}),
  };
}

export function validateResourceProxyConfig(
  c: ResourceProxyServiceFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  if (!c.enableResourceProxy) return [];
  const problems: string[] = [...tlsProtocolSettings(c).problems, ...proxyMaterialProblems(c, env)];
  let kind: string | undefined;
  try {
    kind = parseCallerAuthMethod(c).kind;
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
  problems.push(...gatewayClientProblems(c));
  return problems;
}

/** A probe identity no real mesh issues: a header pattern that accepts it is not pinned. */
const UNPINNED_PROBES: Record<string, string> = {
  'x-forwarded-client-cert': 'URI=spiffe://pullplane-probe.invalid/ns/pullplane-probe/sa/probe-caller',
  'l5d-client-id': 'probe-caller.pullplane-probe.serviceaccount.identity.linkerd.pullplane-probe.invalid',
};

/** What an operator should know about a configuration that is accepted but weaker than it could be. */
export function resourceProxyStartupWarnings(c: ResourceProxyServiceFlags): string[] {
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
