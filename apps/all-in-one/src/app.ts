import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { credentials } from '@grpc/grpc-js';
import type { Tracer } from '@opentelemetry/api';
import { RedisExecutor } from '@pullplane/agent-core';
import { CALLER_TOKEN_AUDIENCE, parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { formatDuration, type InferConfig, loadConfig } from '@pullplane/config';
import {
  createExtensionProxyService,
  type ExtensionProxyService,
  extensionProxyServiceOptions,
} from '@pullplane/extension-proxy';
import { type Authenticator, agentAuthenticator, Gateway } from '@pullplane/gateway';
import { type CertificateAndKey, createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import { createRedisProxy, type RedisProxy } from '@pullplane/redis-proxy';
import {
  agentServerUrl,
  createResourceProxyService,
  type ResourceProxyService,
  renderKubeconfig,
  resourceProxyServiceOptions,
} from '@pullplane/resource-proxy';
import { AgentRouter } from '@pullplane/router';
import { type Fleet, startFleet } from '@pullplane/simulator';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { DEMO_EXTENSION, type DemoExtension, startDemoExtension } from './demo-extension.js';
import type { allInOneOptions } from './options.js';

export type AllInOneConfig = InferConfig<typeof allInOneOptions>;

export interface AllInOneApp {
  readonly gateway: Gateway;
  readonly router: AgentRouter;
  readonly ops: OpsServer;
  readonly resourceProxy: ResourceProxyService;
  readonly extensionProxy: ExtensionProxyService;
  /** Only with --redis-server-address: no Redis is assumed on the machine. */
  readonly redisProxy: RedisProxy | undefined;
  readonly fleet: Fleet | undefined;
  /** Files written for the user (kubeconfig, CA, the Argo CD server's client certificate). */
  readonly files: { kubeconfig: string; ca: string; argocdCert: string; argocdKey: string };
  /** A curl command shaped like Argo CD's call of the demo extension on `agent`. */
  extensionCurl(agent: string): string[];
  /** What to run next, for the startup banner. */
  nextSteps(): string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The port a proxy service listens on (0 before it started). */
const port = (s: { proxy: { port: number } | undefined }) => s.proxy?.port ?? 0;

const REJECT_INTERNAL: Authenticator = () => ({
  ok: false,
  code: 'NO_INTERNAL',
  reason: 'single-process mode has no internal listener',
});

/**
 * The principal services in one process over an in-memory bus, plus demo agents that
 * dial the gateway over real loopback mTLS and serve simulated clusters.
 */
export async function createAllInOneApp(
  c: AllInOneConfig,
  /** `tracer`: set when traces are exported (`--otlp-address`). */
  deps: { logger: Logger; registry: Registry; tracer?: Tracer | undefined },
): Promise<AllInOneApp> {
  const { logger, registry } = deps;
  const stateDir = path.resolve(c.stateDir);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const ca = await createCertificateAuthority({ commonName: 'pullplane-all-in-one-ca' });
  const server = await issueCertificate(ca, {
    commonName: 'pullplane-all-in-one',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const caFile = path.join(stateDir, 'ca.crt');
  writeFileSync(caFile, ca.certPem);
  const names = Array.from({ length: c.agents }, (_, i) => `demo-${i + 1}`);
  const agentCerts = new Map<string, CertificateAndKey>();
  for (const name of names)
    agentCerts.set(name, await issueCertificate(ca, { commonName: name, usage: 'client', kind: 'agent' }));

  const bus = createMemoryBus();
  const gateway = new Gateway({
    bus,
    logger: logger.child({ component: 'stream-gateway' }),
    registry,
    agentListener: {
      host: c.listenHost,
      port: c.gatewayPort,
      tls: { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requireClientCert: true },
    },
    advertiseHost: c.listenHost,
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: REJECT_INTERNAL,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 5_000,
    presenceRefreshMs: 30_000,
  });
  const router = new AgentRouter({
    bus,
    logger: logger.child({ component: 'router' }),
    credentials: credentials.createInsecure(),
    local: gateway,
  });
  const callers = await TokenAuthority.generate({ audience: CALLER_TOKEN_AUDIENCE });
  // Argo CD's server is the extension proxy's only caller: here, whoever holds this certificate.
  const argocdServer = await issueCertificate(ca, {
    commonName: 'argocd-server',
    usage: 'client',
    kind: 'caller',
  });
  const argocdCertFile = path.join(stateDir, 'argocd-server.crt');
  const argocdKeyFile = path.join(stateDir, 'argocd-server.key');
  writeFileSync(argocdCertFile, argocdServer.certPem);
  writeFileSync(argocdKeyFile, argocdServer.keyPem, { mode: 0o600 });
  // The proxies are the same services a deployment runs, configured by their own flags: the
  // listener pair, the callers' CA and the caller token key come from files in the state dir.
  const serverCertFile = path.join(stateDir, 'server.crt');
  const serverKeyFile = path.join(stateDir, 'server.key');
  const callerKeyFile = path.join(stateDir, 'caller-token.key');
  writeFileSync(serverCertFile, server.certPem);
  writeFileSync(serverKeyFile, server.keyPem, { mode: 0o600 });
  writeFileSync(callerKeyFile, callers.exportPrivateKeyPem(), { mode: 0o600 });
  const ops = createOpsServer({
    host: c.listenHost,
    healthzPort: c.opsPort,
    metricsPort: c.opsPort,
    registry,
    logger,
  });
  const listen = (port: number) => [`--listen-host=${c.listenHost}`, `--listen-port=${port}`];
  const timeout = `--request-timeout=${formatDuration(c.requestTimeout)}`;
  // One process: the bus, the router to the gateway beside them and the ops server are shared.
  const inProcess = { registry, tracer: deps.tracer, bus, router, ops };
  const here = { drainTimeout: 2_000, healthzPort: c.opsPort, metricsPort: c.opsPort };
  const resourceProxy = createResourceProxyService(
    {
      ...loadConfig(resourceProxyServiceOptions, {
        argv: [
          ...listen(c.resourceProxyPort),
          `--resource-proxy-cert-path=${serverCertFile}`,
          `--resource-proxy-key-path=${serverKeyFile}`,
          `--resource-proxy-ca-path=${caFile}`,
          `--token-key-path=${callerKeyFile}`,
          timeout,
        ],
        env: {},
      }).config,
      ...here,
    },
    { ...inProcess, logger: logger.child({ component: 'resource-proxy' }) },
  );
  const extensionProxy = createExtensionProxyService(
    {
      ...loadConfig(extensionProxyServiceOptions, {
        argv: [
          ...listen(c.extensionProxyPort),
          `--tls-cert-path=${serverCertFile}`,
          `--tls-key-path=${serverKeyFile}`,
          `--client-ca-path=${caFile}`,
          `--resource-proxy-url=https://${c.listenHost}:${c.resourceProxyPort}`,
          timeout,
        ],
        env: {},
      }).config,
      ...here,
    },
    { ...inProcess, logger: logger.child({ component: 'extension-proxy' }) },
  );
  const demoExtensions = new Map<string, DemoExtension>();
  const principalRedis = c.redisServerAddress;
  const redisProxy = principalRedis
    ? createRedisProxy({
        router,
        logger: logger.child({ component: 'redis-proxy' }),
        registry,
        host: c.listenHost,
        port: c.redisProxyPort,
        principal: { host: principalRedis.host, port: principalRedis.port },
        ...(deps.tracer ? { tracer: deps.tracer } : {}),
      })
    : undefined;
  // Each demo agent serves agent keys from this Redis, its name cut out of every key.
  const agentRedis = c.agentRedisAddress ?? principalRedis;
  const executors = new Map<string, RedisExecutor>();
  if (agentRedis) {
    for (const name of names)
      executors.set(
        name,
        new RedisExecutor({
          agentName: name,
          endpoint: { host: agentRedis.host, port: agentRedis.port },
          logger: logger.child({ component: 'demo-agent', agent: name }),
          ...(deps.tracer ? { tracer: deps.tracer } : {}),
        }),
      );
  }
  ops.addReadinessCheck('gateway', () => (gateway.ready ? true : 'gateway not started'));
  const kubeconfigFile = path.join(stateDir, 'kubeconfig');
  let fleet: Fleet | undefined;

  const extensionCurl = (agent: string): string[] => {
    // What Argo CD's API server sends for GET /extensions/hello/api/info of an app on `agent`.
    return [
      'curl',
      '--cacert',
      caFile,
      '--cert',
      argocdCertFile,
      '--key',
      argocdKeyFile,
      '-H',
      'Argocd-Application-Name: argocd:guestbook',
      '-H',
      'Argocd-Project-Name: default',
      '-H',
      'Argocd-Namespace: argocd',
      '-H',
      `Argocd-Target-Cluster-Name: ${agent}`,
      '-H',
      'Argocd-Username: admin',
      '-H',
      'Argocd-User-Groups: admins',
      `https://${c.listenHost}:${port(extensionProxy)}/${DEMO_EXTENSION}/api/info`,
    ];
  };

  return {
    gateway,
    router,
    ops,
    resourceProxy,
    extensionProxy,
    redisProxy,
    get fleet() {
      return fleet;
    },
    files: { kubeconfig: kubeconfigFile, ca: caFile, argocdCert: argocdCertFile, argocdKey: argocdKeyFile },
    extensionCurl,
    nextSteps() {
      const first = names[0];
      return [
        '',
        'pullplane is running in single-process mode.',
        `  stream gateway   ${c.listenHost}:${gateway.agentPort} (mTLS; agents: ${names.join(', ') || 'none'})`,
        `  resource proxy   https://${c.listenHost}:${port(resourceProxy)}/clusters/<agent>`,
        `  extension proxy  https://${c.listenHost}:${port(extensionProxy)}/<extension>/… (demo extension "${DEMO_EXTENSION}" on every agent)`,
        ...(redisProxy
          ? [
              `  redis proxy      ${c.listenHost}:${redisProxy.port} (principal Redis ${principalRedis!.host}:${principalRedis!.port})`,
            ]
          : []),
        `  health, metrics  http://${c.listenHost}:${c.opsPort}/readyz  /metrics`,
        '',
        'Try:',
        ...(first
          ? [
              `  kubectl --kubeconfig ${kubeconfigFile} get deployments,pods -A`,
              `  kubectl --kubeconfig ${kubeconfigFile} --context ${first} get pods -n demo -w`,
              `  kubectl --kubeconfig ${kubeconfigFile} --context ${first} api-resources`,
              `  ${extensionCurl(first)
                .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`))
                .join(' ')}`,
              ...(redisProxy
                ? [
                    `  redis-cli -h ${c.listenHost} -p ${redisProxy.port} SET 'app|managed-resources|${first}_guestbook|1.8.3.gz' hello`,
                    `  redis-cli -h ${c.listenHost} -p ${redisProxy.port} GET 'app|managed-resources|${first}_guestbook|1.8.3.gz'`,
                  ]
                : []),
            ]
          : ['  (start with --agents=N to get demo agents)']),
        '',
      ].join('\n');
    },
    async start() {
      await ops.listen();
      await gateway.start();
      await router.start();
      await resourceProxy.start();
      await extensionProxy.start();
      await redisProxy?.listen();
      for (const name of names) demoExtensions.set(name, await startDemoExtension(name, logger));
      const entries = await Promise.all(
        names.map(async (name) => ({
          name,
          server: agentServerUrl(`https://${c.listenHost}:${port(resourceProxy)}`, name),
          caPem: ca.certPem,
          // One agent per token: kubectl's --raw drops the /clusters/<agent> prefix, and a
          // single-agent credential still tells the proxy which cluster is meant.
          token: await callers.issue('all-in-one-admin', { agents: [name] }),
        })),
      );
      if (entries.length > 0) writeFileSync(kubeconfigFile, renderKubeconfig(entries), { mode: 0o600 });
      fleet = await startFleet({
        names,
        target: `${c.listenHost}:${gateway.agentPort}`,
        clusters: 'per-agent',
        heartbeatIntervalMs: 30_000,
        logger: logger.child({ component: 'demo-agent' }),
        handlersFor: (name: string) => {
          const executor = executors.get(name);
          const extension = demoExtensions.get(name)!;
          return {
            extension: (s) => extension.handle(s),
            ...(executor ? { redis: (s: Parameters<RedisExecutor['handle']>[0]) => executor.handle(s) } : {}),
          };
        },
        credentialsFor: async (name) => {
          const cert = agentCerts.get(name)!;
          return {
            credentials: credentials.createSsl(
              Buffer.from(ca.certPem),
              Buffer.from(cert.keyPem),
              Buffer.from(cert.certPem),
            ),
            serverNameOverride: 'localhost',
          };
        },
      });
      await fleet.connected();
      // Presence reaches the router asynchronously; wait so the banner's commands work at once.
      const deadline = Date.now() + 5_000;
      while (!names.every((n) => router.lookup(n)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
    },
    async stop() {
      ops.markShuttingDown();
      await resourceProxy.stop();
      await extensionProxy.stop();
      await redisProxy?.close(1_000);
      await fleet?.stop();
      await Promise.all([...executors.values()].map((e) => e.stop()));
      await Promise.all([...demoExtensions.values()].map((e) => e.stop()));
      await gateway.stop();
      router.stop();
      await bus.close();
      await ops.close();
    },
  };
}
