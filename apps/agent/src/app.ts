import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { type ChannelCredentials, credentials, Metadata } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, RedisExecutor } from '@pullplane/agent-core';
import type { InferConfig } from '@pullplane/config';
import { createOpsServer, getOrCreateCounter, getOrCreateGauge, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { agentOptions } from './options.js';

export type AgentConfig = InferConfig<typeof agentOptions>;

/** Package version, reported to the gateway and shown by `agent list`. */
export const AGENT_VERSION = '0.1.0';

type CredsMode = { kind: 'mtls' } | { kind: 'header' } | { kind: 'token'; file: string };

export function parseCreds(spec: string): CredsMode {
  if (spec.startsWith('header:')) return { kind: 'header' };
  if (spec.startsWith('token:')) return { kind: 'token', file: spec.slice('token:'.length) };
  return { kind: 'mtls' };
}

export function validateAgentConfig(c: AgentConfig): string[] {
  const problems: string[] = [];
  const creds = parseCreds(c.creds);
  const plaintext = c.insecurePlaintext || creds.kind === 'header';
  if (creds.kind === 'mtls') {
    if (plaintext) problems.push('--creds=mtls: cannot work with --insecure-plaintext');
    if (!c.tlsClientCert || !c.tlsClientKey)
      problems.push('--creds=mtls: needs --tls-client-cert and --tls-client-key');
  }
  if ((c.tlsClientCert === undefined) !== (c.tlsClientKey === undefined)) {
    problems.push('--tls-client-cert and --tls-client-key go together');
  }
  if ((c.redisCaPath || c.redisTlsInsecure) && !c.redisTls)
    problems.push('--redis-ca-path and --redis-tls-insecure need --redis-tls');
  if (creds.kind === 'token') {
    try {
      readFileSync(creds.file);
    } catch {
      problems.push(`--creds=token:${creds.file}: the token file cannot be read`);
    }
  }
  return problems;
}

/**
 * The agent's own name, for checking redis keys: --agent-name, else the CN of its client
 * certificate (what the gateway authenticates it as). Undefined for header/token credentials.
 */
export function ownName(c: AgentConfig): string | undefined {
  if (c.agentName) return c.agentName;
  if (!c.tlsClientCert) return undefined;
  try {
    const subject = new X509Certificate(readFileSync(c.tlsClientCert)).subject;
    return /(?:^|\n)CN=([^\n]+)/.exec(subject)?.[1];
  } catch {
    return undefined;
  }
}

/** Loads the local cluster's credentials the way client-go does: flag, in-cluster, $KUBECONFIG. */
export function loadKubeConfig(path: string | undefined): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc.getCurrentCluster() ? kc : undefined;
}

function channelCredentials(c: AgentConfig): ChannelCredentials {
  const creds = parseCreds(c.creds);
  if (c.insecurePlaintext || creds.kind === 'header') return credentials.createInsecure();
  const ca = c.rootCaPath ? readFileSync(c.rootCaPath) : null;
  const key = c.tlsClientCert && c.tlsClientKey ? readFileSync(c.tlsClientKey) : null;
  const cert = c.tlsClientCert && c.tlsClientKey ? readFileSync(c.tlsClientCert) : null;
  return credentials.createSsl(ca, key, cert, c.insecureTls ? { rejectUnauthorized: false } : {});
}

export interface AgentAppDeps {
  logger: Logger;
  registry: Registry;
  /** Overrides kubeconfig discovery (tests, simulated clusters). */
  kubeConfig?: KubeConfig;
}

export interface AgentApp {
  readonly agent: Agent;
  readonly redis: RedisExecutor;
  readonly ops: OpsServer;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the agent service, unstarted. */
export function createAgentApp(c: AgentConfig, deps: AgentAppDeps): AgentApp {
  const { logger, registry } = deps;
  const creds = parseCreds(c.creds);
  const kubeConfig = c.enableResourceProxy ? (deps.kubeConfig ?? loadKubeConfig(c.kubeconfig)) : undefined;
  if (c.enableResourceProxy && !kubeConfig)
    logger.warn('no Kubernetes API configured; resource proxy requests will be refused');
  const redis = new RedisExecutor({
    agentName: ownName(c),
    endpoint: {
      host: c.redisAddr.host,
      port: c.redisAddr.port,
      ...(c.redisPassword ? { password: c.redisPassword } : {}),
      ...(c.redisTls
        ? {
            tls: {
              ...(c.redisCaPath ? { ca: readFileSync(c.redisCaPath) } : {}),
              ...(c.redisTlsInsecure ? { insecure: true } : {}),
            },
          }
        : {}),
    },
    logger,
  });
  const agent = new Agent({
    agentName: c.agentName ?? '',
    agentVersion: AGENT_VERSION,
    target: `${c.serverAddress.includes(':') ? `[${c.serverAddress}]` : c.serverAddress}:${c.serverPort}`,
    credentials: channelCredentials(c),
    ...(creds.kind === 'token'
      ? {
          metadata: async () => {
            const md = new Metadata();
            md.set('authorization', `Bearer ${(await readFile(creds.file, 'utf8')).trim()}`);
            return md;
          },
        }
      : {}),
    heartbeatIntervalMs: c.heartbeatInterval,
    keepAlivePingIntervalMs: c.keepAlivePingInterval,
    ...(kubeConfig ? { kubeConfig } : {}),
    enableResourceProxy: c.enableResourceProxy,
    resourceProxyFilter: c.resourceProxyFilter,
    argocdNamespace: c.namespace,
    allowImpersonation: c.resourceProxyAllowImpersonation,
    logger,
    handlers: { redis: (s) => redis.handle(s) },
  });
  const ops = createOpsServer({
    host: '0.0.0.0',
    healthzPort: c.healthzPort,
    metricsPort: c.metricsPort,
    registry,
    logger,
  });
  ops.addReadinessCheck('tunnel', () => (agent.ready ? true : 'not connected to the gateway'));
  getOrCreateGauge(registry, {
    name: 'agent_tunnel_connected',
    help: '1 while the tunnel to the gateway is established.',
    collect() {
      this.set(agent.ready ? 1 : 0);
    },
  });
  getOrCreateGauge(registry, {
    name: 'agent_active_streams',
    help: 'Logical streams being served on the current tunnel.',
    collect() {
      this.set(agent.connector.activeStreams);
    },
  });
  const disconnects = getOrCreateCounter(registry, {
    name: 'agent_tunnel_disconnects_total',
    help: 'Tunnels lost or closed (each is followed by a reconnect).',
  });
  agent.connector.on('disconnected', () => disconnects.inc());
  return {
    agent,
    redis,
    ops,
    async start() {
      await ops.listen();
      agent.start();
      logger.info(
        {
          server: `${c.serverAddress}:${c.serverPort}`,
          creds: creds.kind,
          redis: `${c.redisAddr.host}:${c.redisAddr.port}`,
        },
        'agent started',
      );
    },
    async stop() {
      ops.markShuttingDown();
      await agent.stop();
      await redis.stop();
      await ops.close();
    },
  };
}
