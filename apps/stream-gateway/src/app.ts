import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Tracer } from '@opentelemetry/api';
import {
  AGENT_TOKEN_AUDIENCE,
  type AuthMethod,
  AuthMethodError,
  CALLER_TOKEN_AUDIENCE,
  InMemoryDenyList,
  type MeshPinning,
  type PlaintextListenerSettings,
  parseAuthMethod,
  plaintextListenerProblems,
  plaintextListenerWarnings,
  ReloadableTokenVerifier,
  TokenAuthority,
  type TokenAuthorityOptions,
} from '@pullplane/auth';
import { type Bus, connectBusFromFlags, followRevocations, natsSecurityProblems } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway, internalAuthenticator, type ListenerTls } from '@pullplane/gateway';
import { isLoopback } from '@pullplane/names';
import { ClusterRegistrar, clusterServerUrl, fingerprint } from '@pullplane/registration';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import { type Material, tlsProtocolSettings } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  type GatewayMaterial,
  gatewayMaterialProblems,
  gatewayNeeds,
  openGatewayMaterial,
  registrationUrl,
} from './gateway-material.js';
import type { gatewayOptions } from './options.js';

export type GatewayConfig = InferConfig<typeof gatewayOptions>;

const isPreset = (spec: string) => spec === 'istio' || spec === 'linkerd';

/** The trust domain and namespaces a mesh preset is pinned to, when both are given. */
function pinning(trustDomain: string | undefined, namespaces: readonly string[]): MeshPinning | undefined {
  return trustDomain && namespaces.length > 0 ? { trustDomain, namespaces } : undefined;
}

export function agentAuthMethod(c: GatewayConfig): AuthMethod {
  return parseAuthMethod(c.auth, { mesh: pinning(c.meshTrustDomain, c.meshAgentNamespaces) });
}

export function internalAuthMethod(c: GatewayConfig): AuthMethod {
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

function plaintextSettings(c: GatewayConfig, kind?: string): PlaintextListenerSettings {
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
  c: GatewayConfig,
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
export function gatewayStartupWarnings(c: GatewayConfig): string[] {
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

export interface StreamGatewayDeps {
  logger: Logger;
  registry: Registry;
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus;
  /** Set when traces are exported (`--otlp-address`). */
  tracer?: Tracer | undefined;
}

export interface StreamGatewayApp {
  readonly gateway: Gateway | undefined;
  /**
   * Re-reads TLS material and keys from their files or Secrets (Secrets are also watched);
   * also on a `config-reload` control event and on SIGHUP.
   */
  reloadTls(): Promise<void>;
  readonly ops: OpsServer;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the stream gateway service, unstarted. */
export function createStreamGatewayApp(c: GatewayConfig, deps: StreamGatewayDeps): StreamGatewayApp {
  const { logger, registry } = deps;
  const ops = createOpsServer({
    host: '0.0.0.0',
    healthzPort: c.healthzPort,
    metricsPort: c.metricsPort,
    registry,
    logger,
  });
  let bus = deps.bus;
  let gateway: Gateway | undefined;
  let stopControl: (() => void) | undefined;
  let stopRevocations: (() => void) | undefined;
  let refreshTimer: NodeJS.Timeout | undefined;
  const revokedAgents = new Set<string>();
  ops.addReadinessCheck('gateway', () => (gateway?.ready ? true : 'gateway not accepting agents yet'));
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));

  let material: GatewayMaterial | undefined;
  const protocol = tlsProtocolSettings(c).settings;

  /** Hands the current certificate and CA to both listeners (new connections use them). */
  const applyTls = () => {
    const pair = material?.serverTls?.current;
    if (!gateway || !pair) return;
    try {
      gateway.reloadTls({
        cert: pair.cert,
        key: pair.key,
        ...(material?.rootCa?.current ? { ca: material.rootCa.current } : {}),
      });
    } catch (err) {
      logger.error({ err: String(err) }, 'could not apply TLS material; keeping the current one');
    }
  };
  /** Re-reads files and Secrets (cert-manager rotates files in place), then applies them. */
  const reloadTls = async () => {
    if (!material) return;
    await material.reload();
    applyTls();
  };

  return {
    get gateway() {
      return gateway;
    },
    reloadTls,
    ops,
    async start() {
      await ops.listen();
      const agentAuth = agentAuthMethod(c);
      const internalAuth = internalAuthMethod(c);
      const denyList = new InMemoryDenyList();
      const m = await openGatewayMaterial(c, gatewayNeeds(c, agentAuth, internalAuth), logger);
      material = m;
      for (const piece of [m.serverTls, m.rootCa] as Material<unknown>[]) piece?.onChange(applyTls);
      const tokens = m.agentTokenKey
        ? await followKey(m.agentTokenKey, { denyList, audience: AGENT_TOKEN_AUDIENCE }, logger)
        : undefined;
      const ttl = c.presenceTtl;
      bus ??= await connectBusFromFlags(c, {
        name: 'stream-gateway',
        logger,
        presenceTtlMs: ttl,
        // The gateway owns the presence bucket; revocations it only reads.
        creates: ['presence'],
      });
      const internal = internalAuthenticator(internalAuth, c.internalAllowedClients);
      const registrar = m.registrationKey
        ? await createRegistrar(c, m, logger, () => {
            for (const s of gateway?.sessions() ?? []) register(s.agent);
          })
        : undefined;
      const pair = m.serverTls?.current;
      const tls: ListenerTls | undefined = pair
        ? {
            cert: pair.cert,
            key: pair.key,
            ...(m.rootCa?.current ? { ca: m.rootCa.current } : {}),
            requireClientCert: false,
            ...(protocol ? { protocol } : {}),
          }
        : undefined;
      const listenerTls = (mtls: boolean) => (tls ? { ...tls, requireClientCert: mtls } : undefined);
      const agentTls = listenerTls(agentAuth.kind === 'mtls');
      const internalTls = tls
        ? {
            ...tls,
            requireClientCert: internalAuth.kind === 'mtls',
            ...(internal.perConnection ? { authorize: internal.perConnection } : {}),
          }
        : undefined;
      gateway = new Gateway({
        bus,
        logger,
        registry,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
        agentListener: { host: c.listenHost, port: c.listenPort, ...(agentTls ? { tls: agentTls } : {}) },
        internalListener: {
          host: c.internalListenHost ?? c.listenHost,
          port: c.internalListenPort,
          ...(internalTls ? { tls: internalTls } : {}),
        },
        advertiseHost:
          c.advertiseAddress ??
          (isLoopback(c.internalListenHost ?? c.listenHost) ? '127.0.0.1' : firstAddress()),
        authenticateAgent: agentAuthenticator(agentAuth, {
          ...(tokens ? { tokens } : {}),
          allowUnmarkedCertificates: c.allowLegacyAgentCerts,
          unmarkedHint:
            'issue agent certificates with `pullplane agent create`, or accept certificates without a credential kind with --allow-legacy-agent-certs (see the stream gateway README for the risk)',
          reservedNames: c.internalAllowedClients,
        }),
        authenticateInternal: internal.perCall,
        maxChunkSize: c.maxChunkSize,
        initialWindow: c.streamWindow,
        windowBudgetBytes: c.tunnelWindowBudget,
        relayBudgetBytes: c.relayBudget,
        agentLimits: {
          head: { maxHeaders: c.agentMaxResponseHeaders, maxHeaderBytes: c.agentMaxResponseHeaderBytes },
          maxViolations: c.agentMaxViolations,
          violationWindowMs: c.agentViolationWindow,
          relayShareBytes: c.relayBudgetPerAgent,
        },
        drainTimeoutMs: c.drainTimeout,
        presenceRefreshMs: Math.max(5_000, Math.floor(ttl / 3)),
        isRevoked: (agent) => revokedAgents.has(agent),
        ...(registrar ? { onAgentConnected: (agent: string) => register(agent) } : {}),
      });
      const gw = gateway;
      const failed = (agent: string) => (err: unknown) =>
        logger.error({ agent, err: String(err) }, 'cluster registration failed; retried later');
      const register = (agent: string) => void registrar?.ensure(agent).catch(failed(agent));
      if (registrar) {
        // Tokens in cluster Secrets expire: the gateway holding an agent renews its Secret
        // well before. refresh() asks the API only for Secrets it does not know to be current.
        refreshTimer = setInterval(
          () => {
            for (const s of gw.sessions()) void registrar.refresh(s.agent).catch(failed(s.agent));
          },
          Math.min(c.registrationTokenTtl / 6, 10 * 60_000),
        );
        refreshTimer.unref();
      }
      stopRevocations = await followRevocations(bus, {
        agentRevoked(agent, reason) {
          revokedAgents.add(agent);
          void denyList.deny({ kind: 'agent', agent });
          if (gw.kick(agent, `revoked: ${reason}`)) logger.info({ agent, reason }, 'agent revoked');
        },
        tokenRevoked: (jti) => {
          void denyList.deny({ kind: 'token', jti });
          // A tunnel opened with the token ends with it (its streams too); the agent must come
          // back with a credential that is still good.
          for (const agent of gw.kickToken(jti, `token ${jti} revoked`))
            logger.info({ agent, jti }, 'agent token revoked; tunnel closed');
        },
      });
      stopControl = bus.control.subscribe((ev) => {
        if (ev.type === 'agent-kicked') {
          if (gw.kick(ev.agent, `${ev.type}: ${ev.reason}`))
            logger.info({ agent: ev.agent, reason: ev.reason }, ev.type);
        } else if (ev.type === 'config-reload' && (!ev.service || ev.service === 'stream-gateway')) {
          void reloadTls();
        }
      });
      await gateway.start();
      logger.info(
        {
          gatewayId: gateway.gatewayId,
          agentPort: gateway.agentPort,
          internal: gateway.internalAddress,
          auth: c.auth,
        },
        'stream gateway started',
      );
    },
    async stop() {
      ops.markShuttingDown();
      clearInterval(refreshTimer);
      stopControl?.();
      stopRevocations?.();
      await gateway?.stop();
      material?.stop();
      if (!deps.bus) await bus?.close();
      await ops.close();
    },
  };
}

/** A token verifier that follows its key's rotations (a watched Secret, or SIGHUP for files). */
async function followKey(
  key: Material<string>,
  options: TokenAuthorityOptions,
  logger: Logger,
): Promise<ReloadableTokenVerifier> {
  const verifier = new ReloadableTokenVerifier(await TokenAuthority.fromPem(key.current!, options));
  key.onChange((pem) => {
    TokenAuthority.fromPem(pem, options).then(
      (a) => verifier.set(a),
      (err: unknown) =>
        logger.error({ err: String(err) }, `${key.what} changed to an unusable key; keeping the current one`),
    );
  });
  return verifier;
}

/**
 * Cluster registration: a bearer token per agent, scoped to it, signed with the proxy's key,
 * expiring after --registration-token-ttl and renewed when a third of that is left. A new
 * key (a rotated Secret) changes the fingerprint, so every Secret is rewritten.
 */
async function createRegistrar(
  c: GatewayConfig,
  m: GatewayMaterial,
  logger: Logger,
  onKeyChanged: () => void,
): Promise<ClusterRegistrar> {
  const key = m.registrationKey!;
  let tokens = await TokenAuthority.fromPem(key.current!, { audience: CALLER_TOKEN_AUDIENCE });
  const ttlSeconds = Math.max(60, Math.floor(c.registrationTokenTtl / 1000));
  const caPem = c.registrationCaPath ? readFileSync(c.registrationCaPath, 'utf8') : undefined;
  const kubeConfig: KubeConfig = m.kubeConfig!;
  const base = registrationUrl(c)!.replace(/\/$/, '');
  const registrar = new ClusterRegistrar({
    kubeConfig,
    namespace: c.argocdNamespace,
    serverFor: (agent) => clusterServerUrl(base, agent),
    ...(caPem ? { caPem } : {}),
    credentialsFor: async (agent) => {
      // Taken before issuing, so the recorded expiry is never later than the token's own.
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + ttlSeconds) * 1000);
      return {
        bearerToken: await tokens.issue('argocd-server', { agents: [agent], ttlSeconds }),
        expiresAt,
      };
    },
    refreshBeforeMs: (ttlSeconds * 1000) / 3,
    fingerprint: () => fingerprint(tokens.keyId, caPem, base),
    logger: logger.child({ component: 'registration' }),
    adoptArgocdAgentSecrets: c.adoptArgocdAgentClusters,
  });
  key.onChange((pem) => {
    TokenAuthority.fromPem(pem, { audience: CALLER_TOKEN_AUDIENCE }).then(
      (next) => {
        tokens = next;
        logger.info(
          { keyId: next.keyId },
          'registration key changed; rewriting the cluster Secrets of connected agents',
        );
        onKeyChanged();
      },
      (err: unknown) =>
        logger.error(
          { err: String(err) },
          'registration key changed to an unusable key; keeping the current one',
        ),
    );
  });
  return registrar;
}

/** Outside Kubernetes (no POD_IP), advertise this host's first non-internal IPv4 address. */
function firstAddress(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
