import { readFileSync } from 'node:fs';
import os from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type AuthMethod,
  AuthMethodError,
  InMemoryDenyList,
  parseAuthMethod,
  TokenAuthority,
} from '@pullplane/auth';
import { type Bus, connectBusFromFlags } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway, internalAuthenticator, type ListenerTls } from '@pullplane/gateway';
import { ClusterRegistrar, fingerprint } from '@pullplane/registration';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { gatewayOptions } from './options.js';

export type GatewayConfig = InferConfig<typeof gatewayOptions>;

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function parseAuth(spec: string, flag: string, problems: string[]): AuthMethod | undefined {
  try {
    return parseAuthMethod(spec);
  } catch (err) {
    problems.push(`--${flag}: ${err instanceof AuthMethodError ? err.message : String(err)}`);
    return undefined;
  }
}

/** Cross-field rules, reported together with every other configuration problem. */
export function validateGatewayConfig(c: GatewayConfig): string[] {
  const problems: string[] = [];
  const auth = parseAuth(c.auth, 'auth', problems);
  const internal = parseAuth(c.internalAuth, 'internal-auth', problems);
  const hasTls = Boolean(c.tlsCert && c.tlsKey);
  if ((c.tlsCert === undefined) !== (c.tlsKey === undefined))
    problems.push('--tls-cert and --tls-key go together');
  if (c.insecurePlaintext) {
    if (auth && auth.kind !== 'header') {
      problems.push(
        '--insecure-plaintext requires header authentication (--auth=header:…, istio or linkerd)',
      );
    }
    for (const [flag, host] of [
      ['listen-host', c.listenHost],
      ['internal-listen-host', c.internalListenHost ?? c.listenHost],
    ] as const) {
      if (!isLoopback(host) && !c.allowInsecureNonLoopback) {
        problems.push(
          `--insecure-plaintext on --${flag}=${host} lets anyone who reaches the port forge identity headers; bind 127.0.0.1 behind the sidecar or pass --allow-insecure-non-loopback`,
        );
      }
    }
  } else {
    if (!hasTls) problems.push('TLS needs --tls-cert and --tls-key (or --insecure-plaintext behind a mesh)');
    if (auth?.kind === 'header')
      problems.push('header authentication is only safe with --insecure-plaintext behind a mesh sidecar');
    if (auth?.kind === 'mtls' && !c.rootCaPath)
      problems.push('--auth=mtls needs --root-ca-path to verify agent certificates');
    if (internal?.kind === 'mtls' && !c.rootCaPath)
      problems.push('--internal-auth=mtls needs --root-ca-path');
  }
  if (auth?.kind === 'token' && !c.tokenKeyPath) problems.push('--auth=token needs --token-key-path');
  if (c.resourceProxyUrl && !c.registrationTokenKeyPath) {
    problems.push('--resource-proxy-url (cluster registration) needs --registration-token-key-path');
  }
  if (internal?.kind === 'token') problems.push('--internal-auth does not support token');
  if (internal?.kind === 'header' && !c.insecurePlaintext) {
    problems.push('--internal-auth=header:… is only safe with --insecure-plaintext behind a mesh sidecar');
  }
  return problems;
}

export interface StreamGatewayDeps {
  logger: Logger;
  registry: Registry;
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus;
}

export interface StreamGatewayApp {
  readonly gateway: Gateway | undefined;
  /** Re-reads TLS files; also on a `config-reload` control event and on SIGHUP. */
  reloadTls(): void;
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
  const revokedAgents = new Set<string>();
  ops.addReadinessCheck('gateway', () => (gateway?.ready ? true : 'gateway not accepting agents yet'));
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));

  const tls: ListenerTls | undefined =
    c.insecurePlaintext || !c.tlsCert || !c.tlsKey
      ? undefined
      : {
          cert: readFileSync(c.tlsCert),
          key: readFileSync(c.tlsKey),
          ...(c.rootCaPath ? { ca: readFileSync(c.rootCaPath) } : {}),
          requireClientCert: false,
        };

  /** Re-reads the certificate files (cert-manager rotates them in place). */
  const reloadTls = () => {
    if (!gateway || c.insecurePlaintext || !c.tlsCert || !c.tlsKey) return;
    try {
      gateway.reloadTls({
        cert: readFileSync(c.tlsCert),
        key: readFileSync(c.tlsKey),
        ...(c.rootCaPath ? { ca: readFileSync(c.rootCaPath) } : {}),
      });
    } catch (err) {
      logger.error({ err: String(err) }, 'could not reload TLS material; keeping the current one');
    }
  };

  return {
    get gateway() {
      return gateway;
    },
    reloadTls,
    ops,
    async start() {
      await ops.listen();
      const agentAuth = parseAuthMethod(c.auth);
      const internalAuth = parseAuthMethod(c.internalAuth);
      const denyList = new InMemoryDenyList();
      const tokens =
        agentAuth.kind === 'token' && c.tokenKeyPath
          ? await TokenAuthority.fromFile(c.tokenKeyPath, { denyList })
          : undefined;
      const ttl = c.presenceTtl;
      bus ??= await connectBusFromFlags(c, { name: 'stream-gateway', logger, presenceTtlMs: ttl });
      const internal = internalAuthenticator(internalAuth, c.internalAllowedClients);
      const registrar =
        c.resourceProxyUrl && c.registrationTokenKeyPath ? await createRegistrar(c, logger) : undefined;
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
        agentListener: { host: c.listenHost, port: c.listenPort, ...(agentTls ? { tls: agentTls } : {}) },
        internalListener: {
          host: c.internalListenHost ?? c.listenHost,
          port: c.internalListenPort,
          ...(internalTls ? { tls: internalTls } : {}),
        },
        advertiseHost:
          c.advertiseAddress ??
          (isLoopback(c.internalListenHost ?? c.listenHost) ? '127.0.0.1' : firstAddress()),
        authenticateAgent: agentAuthenticator(agentAuth, tokens ? { tokens } : {}),
        authenticateInternal: internal.perCall,
        maxChunkSize: c.maxChunkSize,
        initialWindow: c.streamWindow,
        drainTimeoutMs: c.drainTimeout,
        presenceRefreshMs: Math.max(5_000, Math.floor(ttl / 3)),
        isRevoked: (agent) => revokedAgents.has(agent),
        ...(registrar
          ? {
              onAgentConnected: (agent: string) =>
                void registrar
                  .ensure(agent)
                  .catch((err: unknown) =>
                    logger.error(
                      { agent, err: String(err) },
                      'cluster registration failed; retried on next connect',
                    ),
                  ),
            }
          : {}),
      });
      const gw = gateway;
      stopRevocations = await bus.revocations.watch((r) => {
        if (r.kind === 'token') return void denyList.deny({ kind: 'token', jti: r.jti });
        revokedAgents.add(r.agent);
        void denyList.deny({ kind: 'agent', agent: r.agent });
        if (gw.kick(r.agent, `revoked: ${r.reason}`))
          logger.info({ agent: r.agent, reason: r.reason }, 'agent revoked');
      });
      stopControl = bus.control.subscribe((ev) => {
        if (ev.type === 'agent-kicked' || ev.type === 'agent-revoked') {
          if (ev.type === 'agent-revoked') void denyList.deny({ kind: 'agent', agent: ev.agent });
          if (gw.kick(ev.agent, `${ev.type}: ${ev.reason}`))
            logger.info({ agent: ev.agent, reason: ev.reason }, ev.type);
        } else if (ev.type === 'token-denied') {
          void denyList.deny({ kind: 'token', jti: ev.jti });
        } else if (ev.type === 'config-reload' && (!ev.service || ev.service === 'stream-gateway')) {
          reloadTls();
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
      stopControl?.();
      stopRevocations?.();
      await gateway?.stop();
      if (!deps.bus) await bus?.close();
      await ops.close();
    },
  };
}

/** Cluster registration: a bearer token per agent, scoped to it, signed with the proxy's key. */
async function createRegistrar(c: GatewayConfig, logger: Logger): Promise<ClusterRegistrar> {
  const tokens = await TokenAuthority.fromFile(c.registrationTokenKeyPath!, { audience: 'resource-proxy' });
  const caPem = c.registrationCaPath ? readFileSync(c.registrationCaPath, 'utf8') : undefined;
  const kubeConfig = new KubeConfig();
  if (c.kubeconfig) kubeConfig.loadFromFile(c.kubeconfig);
  else kubeConfig.loadFromDefault();
  const base = c.resourceProxyUrl!.replace(/\/$/, '');
  return new ClusterRegistrar({
    kubeConfig,
    namespace: c.argocdNamespace,
    serverFor: (agent) => `${base}/clusters/${agent}`,
    ...(caPem ? { caPem } : {}),
    credentialsFor: async (agent) => ({
      bearerToken: await tokens.issue('argocd-server', { agents: [agent] }),
    }),
    fingerprint: fingerprint(tokens.keyId, caPem, base),
    logger: logger.child({ component: 'registration' }),
  });
}

/** Outside Kubernetes (no POD_IP), advertise this host's first non-internal IPv4 address. */
function firstAddress(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
