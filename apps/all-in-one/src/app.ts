import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RedisExecutor } from '@pullplane/agent-core';
import { CALLER_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { defaultConfig, formatDuration, type InferConfig, loadConfig } from '@pullplane/config';
import {
  createExtensionProxyService,
  type ExtensionProxyService,
  extensionProxyServiceOptions,
} from '@pullplane/extension-proxy';
import {
  createGatewayService,
  type Gateway,
  type GatewayService,
  gatewayServiceOptions,
} from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { type CertificateAndKey, createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import type { ProxyReplicaDeps } from '@pullplane/proxy-replica';
import {
  createRedisProxyService,
  type RedisProxyService,
  redisProxyServiceOptions,
} from '@pullplane/redis-proxy';
import {
  agentServerUrl,
  createResourceProxyService,
  type ResourceProxyService,
  renderKubeconfig,
  resourceProxyServiceOptions,
} from '@pullplane/resource-proxy';
import type { Service, ServiceDeps } from '@pullplane/service';
import { type Fleet, startFleet } from '@pullplane/simulator';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import { DEMO_EXTENSION, type DemoExtension, startDemoExtension } from './demo-extension.js';
import type { allInOneOptions } from './options.js';

export type AllInOneConfig = InferConfig<typeof allInOneOptions>;

export interface AllInOneApp extends Service {
  /** The stream gateway, once started. */
  readonly gateway: Gateway;
  readonly gatewayService: GatewayService;
  readonly resourceProxy: ResourceProxyService;
  readonly extensionProxy: ExtensionProxyService;
  /** Only with --redis-server-address: no Redis is assumed on the machine. */
  readonly redisProxy: RedisProxyService | undefined;
  /** /healthz, /readyz and /metrics of every service, on --ops-port. */
  readonly ops: OpsServer;
  /** The port `ops` listens on, once started (--ops-port, or the one picked for 0). */
  readonly opsPort: number;
  readonly fleet: Fleet | undefined;
  /** Files written for the user (kubeconfig, CA, the Argo CD server's client certificate). */
  readonly files: { kubeconfig: string; ca: string; argocdCert: string; argocdKey: string };
  /** A curl command shaped like Argo CD's call of the demo extension on `agent`. */
  extensionCurl(agent: string): string[];
  /** What to run next, for the startup banner. */
  nextSteps(): string;
}

/**
 * The principal services in one process, composed from the same service functions their own
 * mains run (one in-memory bus, one gateway without an internal listener that the proxies
 * reach directly, one metrics registry, one ops port), plus demo agents that dial the gateway
 * over real loopback mTLS and serve simulated clusters.
 */
export async function createAllInOneApp(c: AllInOneConfig, deps: ServiceDeps): Promise<AllInOneApp> {
  const { logger, registry } = deps;
  const stateDir = path.resolve(c.stateDir);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const write = (name: string, body: string, secret = false) => {
    const file = path.join(stateDir, name);
    writeFileSync(file, body, secret ? { mode: 0o600 } : {});
    return file;
  };
  const ca = await createCertificateAuthority({ commonName: 'pullplane-all-in-one-ca' });
  const server = await issueCertificate(ca, {
    commonName: 'pullplane-all-in-one',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const caFile = write('ca.crt', ca.certPem);
  const serverCertFile = write('server.crt', server.certPem);
  const serverKeyFile = write('server.key', server.keyPem, true);
  const names = Array.from({ length: c.agents }, (_, i) => `demo-${i + 1}`);
  const agentCerts = new Map<string, CertificateAndKey>();
  for (const name of names)
    agentCerts.set(name, await issueCertificate(ca, { commonName: name, usage: 'client', kind: 'agent' }));

  const bus = createMemoryBus();
  const ops = createOpsServer({
    host: c.listenHost,
    healthzPort: c.opsPort,
    metricsPort: c.opsPort,
    registry,
    logger,
  });
  const shared = (component: string) => ({
    logger: logger.child({ component }),
    registry,
    tracer: deps.tracer,
    bus,
    ops,
  });
  const opsPorts = { healthzPort: c.opsPort, metricsPort: c.opsPort };
  // Agents authenticate with their certificates (--auth=mtls, the default), read from the state directory.
  const gatewayService = createGatewayService(
    {
      ...defaultConfig(gatewayServiceOptions),
      ...opsPorts,
      listenHost: c.listenHost,
      listenPort: c.gatewayPort,
      advertiseAddress: c.listenHost,
      tlsCert: serverCertFile,
      tlsKey: serverKeyFile,
      rootCaPath: caFile,
      drainTimeout: 5_000,
    },
    { ...shared('stream-gateway'), internalListener: false },
  );
  const started = () => {
    const gateway = gatewayService.gateway;
    if (!gateway) throw new Error('the gateway exists once the all-in-one has started');
    return gateway;
  };
  // Each proxy reaches the gateway of this process directly, as a replica reaches its gateways.
  const replicaDeps = (name: string): ProxyReplicaDeps => ({ ...shared(name), name, localGateway: started });
  const callers = await TokenAuthority.generate({ audience: CALLER_TOKEN_AUDIENCE });
  // Argo CD's server is the extension proxy's only caller: here, whoever holds this certificate.
  const argocdServer = await issueCertificate(ca, {
    commonName: 'argocd-server',
    usage: 'client',
    kind: 'caller',
  });
  const argocdCertFile = write('argocd-server.crt', argocdServer.certPem);
  const argocdKeyFile = write('argocd-server.key', argocdServer.keyPem, true);
  // The proxies are the same services a deployment runs, configured by their own flags: the
  // listener pair, the callers' CA and the caller token key come from files in the state dir.
  const callerKeyFile = write('caller-token.key', callers.exportPrivateKeyPem(), true);
  const listen = (port: number) => [`--listen-host=${c.listenHost}`, `--listen-port=${port}`];
  const timeout = `--request-timeout=${formatDuration(c.requestTimeout)}`;
  // Reached in-process (`localGateway`), not over the gateways' internal listeners.
  const here = { ...opsPorts, gatewayPlaintext: true, drainTimeout: 2_000 };
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
    replicaDeps('resource-proxy'),
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
    replicaDeps('extension-proxy'),
  );
  const principalRedis = c.redisServerAddress;
  const redisProxy = principalRedis
    ? createRedisProxyService(
        {
          ...defaultConfig(redisProxyServiceOptions),
          ...opsPorts,
          listenHost: c.listenHost,
          listenPort: c.redisProxyPort,
          redisServerAddress: principalRedis,
          gatewayPlaintext: true,
          drainTimeout: 1_000,
        },
        replicaDeps('redis-proxy'),
      )
    : undefined;
  const proxies = [resourceProxy, extensionProxy, ...(redisProxy ? [redisProxy] : [])];
  const demoExtensions = new Map<string, DemoExtension>();
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
  const kubeconfigFile = path.join(stateDir, 'kubeconfig');
  let fleet: Fleet | undefined;
  let opsPort = c.opsPort;
  const portOf = (service: { proxy: { port: number } | undefined }, configured: number) =>
    service.proxy?.port ?? configured;

  // exec, cp, attach and port-forward on a demo pod of `agent` (its name is known once started).
  const streamLines = (agent: string): string[] => {
    const pod = demoPod(agent);
    if (!pod) return [];
    const k = `kubectl --kubeconfig ${kubeconfigFile} --context ${agent} -n demo`;
    return [
      `  ${k} exec deploy/guestbook -- echo hello`,
      `  ${k} cp README.md ${pod}:/tmp/README.md`,
      `  ${k} attach -i ${pod}`,
      `  ${k} port-forward pod/${pod} 18080:8080   (then: curl http://127.0.0.1:18080/)`,
    ];
  };
  const demoPod = (agent: string): string | undefined =>
    fleet?.agents
      .find((a) => a.name === agent)
      ?.cluster?.store.list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
      .map((p) => p.metadata.name ?? '')
      .find((n) => n.startsWith('guestbook-'));
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
      `https://${c.listenHost}:${portOf(extensionProxy, c.extensionProxyPort)}/${DEMO_EXTENSION}/api/info`,
    ];
  };

  return {
    get gateway() {
      return started();
    },
    gatewayService,
    resourceProxy,
    extensionProxy,
    redisProxy,
    ops,
    get opsPort() {
      return opsPort;
    },
    get fleet() {
      return fleet;
    },
    files: { kubeconfig: kubeconfigFile, ca: caFile, argocdCert: argocdCertFile, argocdKey: argocdKeyFile },
    extensionCurl,
    nextSteps() {
      const first = names[0];
      const redisPort = redisProxy ? portOf(redisProxy, c.redisProxyPort) : undefined;
      return [
        '',
        'pullplane is running in single-process mode.',
        `  stream gateway   ${c.listenHost}:${gatewayService.gateway?.agentPort ?? c.gatewayPort} (mTLS; agents: ${names.join(', ') || 'none'})`,
        `  resource proxy   https://${c.listenHost}:${portOf(resourceProxy, c.resourceProxyPort)}/clusters/<agent>`,
        `  extension proxy  https://${c.listenHost}:${portOf(extensionProxy, c.extensionProxyPort)}/<extension>/… (demo extension "${DEMO_EXTENSION}" on every agent)`,
        ...(redisPort !== undefined
          ? [
              `  redis proxy      ${c.listenHost}:${redisPort} (principal Redis ${principalRedis!.host}:${principalRedis!.port})`,
            ]
          : []),
        `  health, metrics  http://${c.listenHost}:${opsPort}/readyz  /metrics`,
        '',
        'Try:',
        ...(first
          ? [
              `  kubectl --kubeconfig ${kubeconfigFile} get deployments,pods -A`,
              `  kubectl --kubeconfig ${kubeconfigFile} --context ${first} get pods -n demo -w`,
              `  kubectl --kubeconfig ${kubeconfigFile} --context ${first} api-resources`,
              ...streamLines(first),
              `  ${extensionCurl(first)
                .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`))
                .join(' ')}`,
              ...(redisPort !== undefined
                ? [
                    `  redis-cli -h ${c.listenHost} -p ${redisPort} SET 'app|managed-resources|${first}_guestbook|1.8.3.gz' hello`,
                    `  redis-cli -h ${c.listenHost} -p ${redisPort} GET 'app|managed-resources|${first}_guestbook|1.8.3.gz'`,
                  ]
                : []),
            ]
          : ['  (start with --agents=N to get demo agents)']),
        '',
      ].join('\n');
    },
    async start() {
      opsPort = (await ops.listen()).healthzPort;
      await gatewayService.start();
      for (const proxy of proxies) await proxy.start();
      for (const name of names) demoExtensions.set(name, await startDemoExtension(name, logger));
      const resourceUrl = `https://${c.listenHost}:${portOf(resourceProxy, c.resourceProxyPort)}`;
      const entries = await Promise.all(
        names.map(async (name) => ({
          name,
          server: agentServerUrl(resourceUrl, name),
          caPem: ca.certPem,
          // One agent per token: kubectl's --raw drops the /clusters/<agent> prefix, and a
          // single-agent credential still tells the proxy which cluster is meant.
          token: await callers.issue('all-in-one-admin', { agents: [name] }),
        })),
      );
      if (entries.length > 0) writeFileSync(kubeconfigFile, renderKubeconfig(entries), { mode: 0o600 });
      fleet = await startFleet({
        names,
        target: `${c.listenHost}:${started().agentPort}`,
        clusters: 'per-agent',
        // The demo pods take kubectl exec, cp, attach and port-forward.
        exec: { enabled: true },
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
            credentials: tunnelCredentials.tls(
              Buffer.from(ca.certPem),
              Buffer.from(cert.keyPem),
              Buffer.from(cert.certPem),
            ),
            serverNameOverride: 'localhost',
          };
        },
      });
      await fleet.connected();
      // Presence reaches each proxy's router asynchronously; wait so the banner's commands work at once.
      const deadline = Date.now() + 5_000;
      const routed = () => proxies.every((p) => names.every((n) => p.router?.lookup(n)));
      while (!routed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    },
    async reload() {
      await gatewayService.reload();
      await redisProxy?.reload();
    },
    async stop() {
      ops.markShuttingDown();
      for (const proxy of proxies) await proxy.stop();
      await fleet?.stop();
      await Promise.all([...executors.values()].map((e) => e.stop()));
      await Promise.all([...demoExtensions.values()].map((e) => e.stop()));
      await gatewayService.stop();
      await bus.close();
      await ops.close();
    },
  };
}
