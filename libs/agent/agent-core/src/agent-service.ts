import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Metadata } from '@grpc/grpc-js';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Service, type ServiceDeps, serviceOps } from '@pullplane/service';
import { getOrCreateCounter, getOrCreateGauge, type OpsServer } from '@pullplane/telemetry';
import { kubeApiConfigured, loadKubeAccess, SecretWatch, tlsProtocolSettings } from '@pullplane/tls-material';
import { Agent } from './agent.js';
import {
  type AgentMaterial,
  agentMaterialProblems,
  agentRedisPassword,
  type CredsMode,
  openAgentMaterial,
  parseCreds as parseCredsSpec,
} from './agent-material.js';
import type { AgentServiceConfig } from './agent-options.js';
import { argocdAgentAgentMetrics } from './argocd-agent-metrics.js';
import { createClusterAgentService } from './cluster-agent/cluster-agent-service.js';
import { ExtensionExecutor } from './extension-executor.js';
import { ExtensionRegistry } from './extension-registry.js';
import { RedisExecutor } from './redis-executor.js';

/** Package version, reported to the gateway and shown by `agent list`. */
export const AGENT_VERSION = '0.1.0';

/** The agent's credentials mode; throws on forms `validateAgentConfig` reports. */
function parseCreds(spec: string): CredsMode {
  const creds = parseCredsSpec(spec);
  if ('problem' in creds) throw new Error(creds.problem);
  return creds;
}

export function validateAgentConfig(
  c: AgentServiceConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  if (c.clusterAgent !== undefined) {
    // The ClusterAgent's spec supplies server, name and credentials; it is checked when read.
    return kubeApiConfigured({ kubeconfig: c.kubeconfig }, env)
      ? [...tlsProtocolSettings(c).problems]
      : [
          `--cluster-agent: the ClusterAgent ${c.namespace}/${c.clusterAgent} is read through the local Kubernetes API, which is not configured (in-cluster or --kubeconfig)`,
        ];
  }
  if (c.serverAddress === undefined)
    return ['--server-address is required (or --cluster-agent naming a ClusterAgent that holds it)'];
  const parsed = parseCredsSpec(c.creds);
  if ('problem' in parsed) return [parsed.problem];
  const creds = parsed;
  const problems: string[] = [...tlsProtocolSettings(c).problems];
  const plaintext = c.insecurePlaintext || creds.kind === 'header';
  if (creds.kind === 'mtls' && plaintext)
    problems.push('--creds=mtls: cannot work with --insecure-plaintext');
  if ((c.tlsClientCert === undefined) !== (c.tlsClientKey === undefined)) {
    problems.push('--tls-client-cert and --tls-client-key go together');
  }
  // argocd-agent's params carry --redis-ca-path (a mount path) whether or not TLS is on: it
  // is used, and must exist, only with --redis-tls.
  problems.push(...agentMaterialProblems(c, creds, env));
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
export function ownName(c: AgentServiceConfig): string | undefined {
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
function loadKubeConfig(path: string | undefined, context?: string): KubeConfig | undefined {
  const kc = loadKubeAccess({ kubeconfig: path, kubecontext: context });
  return kc.getCurrentCluster() ? kc : undefined;
}

export interface AgentServiceDeps extends ServiceDeps {
  /** Overrides kubeconfig discovery (tests, simulated clusters). */
  kubeConfig?: KubeConfig;
  /** The bearer token for --creds=token:, read at every connect instead of the file (a ClusterAgent's). */
  token?: () => Promise<string>;
}

export interface AgentService extends Service {
  readonly agent: Agent;
  readonly redis: RedisExecutor;
  /** The extension map, when --extensions-config-path or --extensions-config is set. */
  readonly extensions: ExtensionRegistry | undefined;
  /** Re-reads the extension map now (SIGHUP); the file is also watched. */
  reloadExtensions(): Promise<void>;
  readonly ops: OpsServer;
  /** When the client certificate the next tunnel presents expires (none: no certificate, or not started). */
  clientCertificateExpiry(): Date | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The agent as a service, unstarted: its credentials (files, or watched Secrets of the local
 * cluster), the tunnel to the gateway and what it serves through it (the local Kubernetes API,
 * the local Redis, the extension map), with its metrics and argocd-agent's.
 */
export function createAgentService(c: AgentServiceConfig, deps: AgentServiceDeps): AgentService {
  const { logger, registry } = deps;
  const creds = parseCreds(c.creds);
  if (c.serverAddress === undefined) throw new Error('--server-address is required');
  const server = c.serverAddress;
  const localKube =
    deps.kubeConfig ??
    (kubeApiConfigured({ kubeconfig: c.kubeconfig })
      ? loadKubeConfig(c.kubeconfig, c.kubecontext)
      : undefined);
  const kubeConfig = c.enableResourceProxy ? localKube : undefined;
  if (c.enableResourceProxy && !kubeConfig)
    logger.warn('no Kubernetes API configured; resource proxy requests will be refused');
  const password = agentRedisPassword(c, logger);
  // Filled from the CA file or Secret at start; new Redis connections read it from here.
  const redisTls: { ca?: Buffer; insecure?: boolean } = c.redisTlsInsecure ? { insecure: true } : {};
  const redis = new RedisExecutor({
    agentName: ownName(c),
    endpoint: {
      host: c.redisAddr.host,
      port: c.redisAddr.port,
      ...(password ? { password } : {}),
      ...(c.redisTls ? { tls: redisTls } : {}),
    },
    logger,
    onCommand: (name, failed) => compat.redisCommand(name, failed),
    ...(deps.tracer ? { tracer: deps.tracer } : {}),
  });
  let material: AgentMaterial | undefined;
  let extensionSecret: SecretWatch | undefined;
  const extensions =
    c.extensionsConfigPath !== undefined || c.extensionsConfig !== undefined
      ? new ExtensionRegistry({
          ...(c.extensionsConfigPath !== undefined
            ? { path: c.extensionsConfigPath }
            : { inline: c.extensionsConfig ?? '' }),
          secret: {
            current: () => extensionSecret?.current,
            onChange: (fn) => {
              extensionSecret?.on('change', fn);
              return () => extensionSecret?.off('change', fn);
            },
            description: `Secret ${c.namespace}/${c.extensionsSecretName}`,
          },
          logger: logger.child({ component: 'extensions' }),
        })
      : undefined;
  const extensionRequests = getOrCreateCounter(registry, {
    name: 'agent_extension_requests_total',
    help: 'Proxy extension requests served, by extension (_unknown: not in the map) and status code.',
    labelNames: ['extension', 'code'],
  });
  const executor = extensions
    ? new ExtensionExecutor({
        registry: extensions,
        agentName: ownName(c) ?? 'this agent',
        logger: logger.child({ component: 'extensions' }),
        onRequest: (extension, code) => extensionRequests.inc({ extension, code: String(code) }),
      })
    : undefined;
  const execSessions = getOrCreateCounter(registry, {
    name: 'agent_exec_sessions_total',
    help: "exec, attach and port-forward sessions, by kind, the cluster's (or the agent's refusal) status code and how they ended.",
    labelNames: ['kind', 'code', 'ended'],
  });
  // The agent exists only below; the gauge asks it when Prometheus scrapes.
  let isConnected = () => false;
  const compat = argocdAgentAgentMetrics(registry, () => isConnected());
  const agent = new Agent({
    agentName: c.agentName ?? '',
    agentVersion: AGENT_VERSION,
    target: `${server.includes(':') ? `[${server}]` : server}:${c.serverPort}`,
    credentials: () => {
      if (!material) throw new Error('the agent connects only after start()');
      return material.tunnelCredentials();
    },
    ...(creds.kind === 'token'
      ? {
          metadata: async () => {
            const md = new Metadata();
            const token = deps.token ? await deps.token() : (await readFile(creds.file, 'utf8')).trim();
            md.set('authorization', `Bearer ${token}`);
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
    exec: {
      enabled: c.enableExec,
      maxSessions: c.execMaxSessions,
      maxDurationMs: c.execMaxDuration,
      idleTimeoutMs: c.execIdleTimeout,
    },
    onSession: (r) =>
      execSessions.inc({
        kind: r.kind,
        code: String(r.status),
        ended: r.ended ?? (r.status === 101 ? 'closed' : 'refused'),
      }),
    logger,
    handlers: {
      redis: (s) => redis.handle(s),
      ...(executor ? { extension: (s) => executor.handle(s) } : {}),
    },
    ...(deps.tracer ? { tracer: deps.tracer, tracedName: ownName(c) } : {}),
    onKubeRequest: (refused) => compat.kubeRequest(refused),
  });
  isConnected = () => agent.ready;
  agent.connector.on('connected', () => compat.connected());
  agent.connector.on('rejected', () => compat.rejected());
  const ops = serviceOps('agent', c, deps);
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
  getOrCreateGauge(registry, {
    name: 'agent_exec_sessions_active',
    help: 'exec, attach and port-forward sessions open now (and upgrades being set up).',
    collect() {
      this.set(agent.activeSessions);
    },
  });
  const disconnects = getOrCreateCounter(registry, {
    name: 'agent_tunnel_disconnects_total',
    help: 'Tunnels lost or closed (each is followed by a reconnect).',
  });
  agent.connector.on('disconnected', () => disconnects.inc());
  const reloadExtensions = async () => extensions?.reload();
  return {
    agent,
    redis,
    extensions,
    ops: ops.server,
    reloadExtensions,
    reload: reloadExtensions,
    clientCertificateExpiry: () => material?.clientPair?.expiresAt,
    async start() {
      await ops.open();
      if (extensions) {
        if (localKube) {
          extensionSecret = new SecretWatch({
            kubeConfig: localKube,
            namespace: c.namespace,
            name: c.extensionsSecretName,
            logger,
          });
          // Without the Secret, extensions whose headers need it answer 503; the rest work.
          await extensionSecret
            .start()
            .catch((err: unknown) =>
              logger.warn(
                { secret: c.extensionsSecretName, err: String(err) },
                'cannot read the extensions Secret; headers written as $key are unavailable',
              ),
            );
        }
        await extensions.start();
      }
      material = await openAgentMaterial(c, creds, localKube, tlsProtocolSettings(c).settings, logger);
      material.observe(registry, 'agent');
      const redisCa = material.redisCa;
      if (redisCa?.current) redisTls.ca = redisCa.current;
      redisCa?.onChange((ca) => {
        redisTls.ca = ca;
      });
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
      extensions?.stop();
      extensionSecret?.stop();
      material?.stop();
      await redis.stop();
      await ops.close();
    },
  };
}

/**
 * What the agent's main runs: the agent from --cluster-agent's ClusterAgent when one is named
 * (its spec wins over the flags), else the agent from the flags.
 */
export function createAgentFromConfig(c: AgentServiceConfig, deps: AgentServiceDeps): Service {
  return c.clusterAgent !== undefined ? createClusterAgentService(c, deps) : createAgentService(c, deps);
}
