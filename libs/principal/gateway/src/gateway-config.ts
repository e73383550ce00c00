import {
  type AuthMethod,
  AuthMethodError,
  type MeshPinning,
  type PlaintextListenerSettings,
  parseAuthMethod,
  plaintextListenerProblems,
  plaintextListenerWarnings,
} from '@pullplane/auth';
import { natsSecurityProblems } from '@pullplane/bus';
import { tlsProtocolSettings } from '@pullplane/tls-material';
import { gatewayMaterialProblems, gatewayNeeds, registrationUrl } from './gateway-material.js';
import type { GatewayServiceConfig } from './gateway-options.js';

const isPreset = (spec: string) => spec === 'istio' || spec === 'linkerd';

/** The trust domain and namespaces a mesh preset is pinned to, when both are given. */
function pinning(trustDomain: string | undefined, namespaces: readonly string[]): MeshPinning | undefined {
  return trustDomain && namespaces.length > 0 ? { trustDomain, namespaces } : undefined;
}

export function agentAuthMethod(c: GatewayServiceConfig): AuthMethod {
  return parseAuthMethod(c.auth, { mesh: pinning(c.meshTrustDomain, c.meshAgentNamespaces) });
}

export function internalAuthMethod(c: GatewayServiceConfig): AuthMethod {
  return parseAuthMethod(c.internalAuth, { mesh: pinning(c.meshTrustDomain, c.internalMeshNamespaces) });
}

function parseAuth(
  parse: () => AuthMethod,
  spec: string,
  flag: string,
  namespacesFlag: string,
  problems: string[],
): AuthMethod | undefined {
  try {
    return parse();
  } catch (err) {
    if (err instanceof AuthMethodError && err.code === 'AUTH_METHOD_MESH_UNPINNED' && isPreset(spec)) {
      problems.push(
        `--${flag}=${spec} admits any workload whose service account has the right name unless it is pinned: set --mesh-trust-domain and --${namespacesFlag} (${err.message}), or give an explicit --${flag}=header:<name>:<regex>`,
      );
    } else {
      problems.push(`--${flag}: ${err instanceof AuthMethodError ? err.message : String(err)}`);
    }
    return undefined;
  }
}

function plaintextSettings(c: GatewayServiceConfig, kind?: string): PlaintextListenerSettings {
  return {
    insecurePlaintext: c.insecurePlaintext,
    allowInsecureNonLoopback: c.allowInsecureNonLoopback,
    listeners: [
      { flag: 'listen-host', host: c.listenHost },
      { flag: 'internal-listen-host', host: c.internalListenHost ?? c.listenHost },
    ],
    ...(kind ? { callerMethod: { flag: 'auth', kind } } : {}),
  };
}

/**
 * Cross-field rules, reported together with every other configuration problem. `env` tells
 * whether a Kubernetes API is configured, for material read from Secrets.
 */
export function validateGatewayConfig(
  c: GatewayServiceConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const problems: string[] = [];
  const auth = parseAuth(() => agentAuthMethod(c), c.auth, 'auth', 'mesh-agent-namespaces', problems);
  const internal = parseAuth(
    () => internalAuthMethod(c),
    c.internalAuth,
    'internal-auth',
    'internal-mesh-namespaces',
    problems,
  );
  if ((c.tlsCert === undefined) !== (c.tlsKey === undefined))
    problems.push('--tls-cert and --tls-key go together');
  problems.push(...tlsProtocolSettings(c).problems);
  problems.push(...gatewayMaterialProblems(c, gatewayNeeds(c, auth, internal), env));
  problems.push(...plaintextListenerProblems(plaintextSettings(c, auth?.kind)));
  if (c.insecurePlaintext) {
    if (internal && internal.kind !== 'header') {
      problems.push(
        `--insecure-plaintext with --internal-auth=${c.internalAuth} would leave Link calls on the internal listener unauthenticated (there is no TLS to carry a client certificate): set --internal-auth=istio, linkerd or header:<name>:<regex> with --internal-allowed-clients`,
      );
    }
  }
  if (c.allowLegacyAgentCerts && auth && auth.kind !== 'mtls')
    problems.push('--allow-legacy-agent-certs applies to --auth=mtls only');
  if (c.adoptArgocdAgentClusters && !registrationUrl(c))
    problems.push(
      '--adopt-argocd-agent-clusters rewrites cluster Secrets as agents connect: it needs cluster registration (--resource-proxy-url, or --enable-self-cluster-registration)',
    );
  if (internal?.kind === 'token') problems.push('--internal-auth does not support token');
  problems.push(...natsSecurityProblems(c));
  if (internal?.kind === 'header' && !c.insecurePlaintext) {
    problems.push('--internal-auth=header:… is only safe with --insecure-plaintext behind a mesh sidecar');
  }
  if (internal?.kind === 'header' && c.internalAllowedClients.length === 0) {
    problems.push(
      "--internal-auth with a mesh identity needs --internal-allowed-clients (the proxies' service accounts): in a shared trust domain an agent's identity looks just like a proxy's",
    );
  }
  return problems;
}

/** A probe identity no real mesh issues: a header pattern that accepts it is not pinned. */
const UNPINNED_PROBES: Record<string, string> = {
  'x-forwarded-client-cert': 'URI=spiffe://pullplane-probe.invalid/ns/pullplane-probe/sa/probe-agent',
  'l5d-client-id': 'probe-agent.pullplane-probe.serviceaccount.identity.linkerd.pullplane-probe.invalid',
};

/** What an operator should know about a configuration that is accepted but weaker than it could be. */
export function gatewayStartupWarnings(c: GatewayServiceConfig): string[] {
  const warnings: string[] = [];
  warnings.push(...plaintextListenerWarnings(plaintextSettings(c)));
  if (c.allowLegacyAgentCerts) {
    warnings.push(
      '--allow-legacy-agent-certs: a certificate without a credential kind opens the tunnel of the agent its CN names; any such caller certificate of the same CA can do so too',
    );
  }
  for (const [flag, spec, namespacesFlag] of [
    ['auth', c.auth, 'mesh-agent-namespaces'],
    ['internal-auth', c.internalAuth, 'internal-mesh-namespaces'],
  ] as const) {
    if (!spec.startsWith('header:')) continue;
    let method: AuthMethod;
    try {
      method = parseAuthMethod(spec);
    } catch {
      continue;
    }
    const probe = method.kind === 'header' ? UNPINNED_PROBES[method.header] : undefined;
    if (method.kind === 'header' && probe && method.pattern.test(probe)) {
      warnings.push(
        `--${flag}=${spec} accepts identities from any trust domain and namespace; prefer the preset with --mesh-trust-domain and --${namespacesFlag}`,
      );
    }
  }
  return warnings;
}
