import { readFileSync } from 'node:fs';
import os from 'node:os';
import {
  AGENT_TOKEN_AUDIENCE,
  CALLER_TOKEN_AUDIENCE,
  InMemoryDenyList,
  ReloadableTokenVerifier,
  TokenAuthority,
  type TokenAuthorityOptions,
} from '@pullplane/auth';
import { type Bus, connectBusFromFlags, followRevocations, onConfigReload } from '@pullplane/bus';
import { isLoopback } from '@pullplane/names';
import { ClusterRegistrar, clusterServerUrl, fingerprint, secretName } from '@pullplane/registration';
import { type Service, type ServiceDeps, serviceOps } from '@pullplane/service';
import type { OpsServer } from '@pullplane/telemetry';
import {
  type FollowedMaterial,
  followListenerMaterial,
  type Material,
  tlsProtocolSettings,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import { agentAuthenticator, internalAuthenticator } from './authenticators.js';
import type { Authenticator } from './caller-auth.js';
import { Gateway } from './gateway.js';
import { agentAuthMethod, internalAuthMethod } from './gateway-config.js';
import {
  type GatewayMaterial,
  gatewayNeeds,
  openGatewayMaterial,
  registrationUrl,
} from './gateway-material.js';
import type { GatewayServiceConfig } from './gateway-options.js';
import type { ListenerTls } from './grpc-listener.js';
import { tellRegistration } from './registration-notice.js';

export interface GatewayServiceDeps extends ServiceDeps {
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus | undefined;
  /**
   * false: no internal listener (single-process mode, where the proxies of this very process
   * reach the gateway directly, `Gateway.openLocal`). Default true.
   */
  internalListener?: boolean;
}

export interface GatewayService extends Service {
  /** Created at start, from the material it opens. */
  readonly gateway: Gateway | undefined;
  readonly ops: OpsServer;
  /**
   * Re-reads TLS material and keys from their files or Secrets (Secrets are also watched);
   * also on a `config-reload` control event and on SIGHUP (`reload`).
   */
  reloadTls(): Promise<void>;
}

const NO_INTERNAL_LISTENER: Authenticator = () => ({
  ok: false,
  code: 'NO_INTERNAL',
  reason: 'this gateway has no internal listener (single-process mode)',
});

/**
 * The stream gateway as a service, unstarted: its certificates and keys (files, or watched
 * Secrets), the agent and internal listeners with their authentication, presence on the bus,
 * revocations (a revoked agent or token closes its tunnels), kicks, cluster registration of
 * connecting agents, and TLS reloads.
 */
export function createGatewayService(c: GatewayServiceConfig, deps: GatewayServiceDeps): GatewayService {
  const { logger, registry } = deps;
  const ops = serviceOps('stream-gateway', c, deps);
  const withInternal = deps.internalListener ?? true;
  let bus = deps.bus;
  let gateway: Gateway | undefined;
  let material: GatewayMaterial | undefined;
  let followed: FollowedMaterial | undefined;
  let stopKicks: (() => void) | undefined;
  let stopRevocations: (() => void) | undefined;
  let refreshTimer: NodeJS.Timeout | undefined;
  const revokedAgents = new Set<string>();
  ops.addReadinessCheck('gateway', () => (gateway?.ready ? true : 'gateway not accepting agents yet'));
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));
  const protocol = tlsProtocolSettings(c).settings;
  const reloadTls = async () => void (await followed?.reload());

  return {
    get gateway() {
      return gateway;
    },
    ops: ops.server,
    reloadTls,
    reload: reloadTls,
    async start() {
      await ops.open();
      const agentAuth = agentAuthMethod(c);
      const internalAuth = internalAuthMethod(c);
      const denyList = new InMemoryDenyList();
      const m = await openGatewayMaterial(c, gatewayNeeds(c, agentAuth, internalAuth), logger);
      m.observe(registry, 'stream-gateway');
      material = m;
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
      const connected = bus;
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
      const agentTls = tls ? { ...tls, requireClientCert: agentAuth.kind === 'mtls' } : undefined;
      const internalTls = tls
        ? {
            ...tls,
            requireClientCert: internalAuth.kind === 'mtls',
            ...(internal.perConnection ? { authorize: internal.perConnection } : {}),
          }
        : undefined;
      const internalHost = c.internalListenHost ?? c.listenHost;
      gateway = new Gateway({
        bus: connected,
        logger,
        registry,
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
        agentListener: { host: c.listenHost, port: c.listenPort, ...(agentTls ? { tls: agentTls } : {}) },
        ...(withInternal
          ? {
              internalListener: {
                host: internalHost,
                port: c.internalListenPort,
                ...(internalTls ? { tls: internalTls } : {}),
              },
            }
          : {}),
        advertiseHost: c.advertiseAddress ?? (isLoopback(internalHost) ? '127.0.0.1' : firstAddress()),
        authenticateAgent: agentAuthenticator(agentAuth, {
          ...(tokens ? { tokens } : {}),
          allowUnmarkedCertificates: c.allowLegacyAgentCerts,
          unmarkedHint:
            'issue agent certificates with `pullplane agent create`, or accept certificates without a credential kind with --allow-legacy-agent-certs (see the stream gateway README for the risk)',
          reservedNames: c.internalAllowedClients,
        }),
        authenticateInternal: withInternal ? internal.perCall : NO_INTERNAL_LISTENER,
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
      // The listeners' certificate and CA follow rotations, SIGHUP and config-reload events.
      followed = followListenerMaterial(
        { pair: m.serverTls, clientCa: m.rootCa, reload: () => m.reload() },
        {
          logger,
          apply: (next) => gw.reloadTls(next),
          reloadOn: (reload) => onConfigReload(connected, 'stream-gateway', reload),
        },
      );
      const failed = (agent: string) => (err: unknown) =>
        logger.error({ agent, err: String(err) }, 'cluster registration failed; retried later');
      const register = (agent: string) =>
        void registrar?.ensure(agent).then(
          (result) =>
            tellRegistration(gw.session(agent), {
              result,
              secret: `${c.argocdNamespace}/${secretName(agent)}`,
              server: clusterServerUrl(registrationUrl(c)!.replace(/\/$/, ''), agent),
            }),
          (err: unknown) => {
            failed(agent)(err);
            tellRegistration(gw.session(agent), { error: String(err) });
          },
        );
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
      stopRevocations = await followRevocations(connected, {
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
      stopKicks = connected.control.subscribe((ev) => {
        if (ev.type === 'agent-kicked' && gw.kick(ev.agent, `${ev.type}: ${ev.reason}`))
          logger.info({ agent: ev.agent, reason: ev.reason }, ev.type);
      });
      await gw.start();
      logger.info(
        {
          gatewayId: gw.gatewayId,
          agentPort: gw.agentPort,
          internal: gw.internalAddress,
          auth: c.auth,
        },
        'stream gateway started',
      );
    },
    async stop() {
      ops.markShuttingDown();
      clearInterval(refreshTimer);
      followed?.stop();
      stopKicks?.();
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
  c: GatewayServiceConfig,
  m: GatewayMaterial,
  logger: Logger,
  onKeyChanged: () => void,
): Promise<ClusterRegistrar> {
  const key = m.registrationKey!;
  let tokens = await TokenAuthority.fromPem(key.current!, { audience: CALLER_TOKEN_AUDIENCE });
  const ttlSeconds = Math.max(60, Math.floor(c.registrationTokenTtl / 1000));
  const caPem = c.registrationCaPath ? readFileSync(c.registrationCaPath, 'utf8') : undefined;
  const base = registrationUrl(c)!.replace(/\/$/, '');
  const registrar = new ClusterRegistrar({
    kubeConfig: m.kubeConfig!,
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
