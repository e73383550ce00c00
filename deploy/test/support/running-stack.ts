// The four services as the deploy/ bundles run them, each a process of its own (the built apps),
// with real NATS and redis-servers and the fake Kubernetes API as the agent's cluster: what
// the monitoring tests scrape. NATS is locked as deploy/ locks it: the shipped users and
// permissions, the gateway with the gateway role's nkey, the proxies with the proxy role's.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import {
  type AppProcess,
  createTestPki,
  type FakeKubeApiServer,
  freePort,
  type LockedNatsServer,
  makeTempDir,
  type RedisServerHandle,
  seedArgoDemo,
  spawnAppProcess,
  startFakeKubeApiServer,
  startLockedNatsServer,
  startRedisServer,
  type TestPki,
  waitFor,
} from '@pullplane/testing';

export interface RunningStack {
  pki: TestPki;
  gateway: AppProcess;
  resourceProxy: AppProcess;
  redisProxy: AppProcess;
  agent: AppProcess;
  /** /metrics port of each service. */
  metrics: Record<'gateway' | 'resourceProxy' | 'redisProxy' | 'agent', number>;
  resourceProxyPort: number;
  redisProxyPort: number;
  redisPassword: string;
  /** Signs caller tokens the resource proxy accepts. */
  tokens: TokenAuthority;
  close(): Promise<void>;
}

export async function startStack(): Promise<RunningStack> {
  const dir = makeTempDir('pullplane-stack-');
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const pki = await createTestPki();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const ca = write('ca.crt', pki.ca.certPem);
  const tlsCert = write('tls.crt', server.certPem);
  const tlsKey = write('tls.key', server.keyPem);
  const pair = async (name: string, issue: Promise<{ certPem: string; keyPem: string }>) => {
    const c = await issue;
    return { cert: write(`${name}.crt`, c.certPem), key: write(`${name}.key`, c.keyPem) };
  };
  const rpClient = await pair('rp', pki.proxyCert('resource-proxy'));
  const redisClient = await pair('redis', pki.proxyCert('redis-proxy'));
  const agentCert = await pair('agent', pki.agentCert('agent-a'));
  const tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  const jwt = write('jwt.key', tokens.exportPrivateKeyPem());

  const started: Array<{ stop(): Promise<unknown> }> = [];
  const nats: LockedNatsServer = await startLockedNatsServer();
  started.push(nats);
  const redisPassword = 'argocd-redis-pw';
  const principalRedis: RedisServerHandle = await startRedisServer({ password: redisPassword });
  const agentRedis: RedisServerHandle = await startRedisServer();
  started.push(principalRedis, agentRedis);
  const cluster: FakeKubeApiServer = await startFakeKubeApiServer({ token: 'agent-sa' });
  seedArgoDemo(cluster.store);
  started.push({ stop: () => cluster.close() });
  const kubeconfig = await cluster.writeKubeconfig(path.join(dir, 'agent.kubeconfig'), { token: 'agent-sa' });

  const metrics = {
    gateway: await freePort(),
    resourceProxy: await freePort(),
    redisProxy: await freePort(),
    agent: await freePort(),
  };
  const agentPort = await freePort();
  const resourceProxyPort = await freePort();
  const redisProxyPort = await freePort();
  const gatewayClient = (p: { cert: string; key: string }) => [
    `--gateway-cert-path=${p.cert}`,
    `--gateway-key-path=${p.key}`,
    `--gateway-ca-path=${ca}`,
    '--gateway-server-name=localhost',
    `--nats-url=${nats.url}`,
    `--nats-nkey-seed-path=${nats.seeds.proxy}`,
  ];
  const processes: AppProcess[] = [];
  const spawn = (app: string, args: string[]) => {
    const p = spawnAppProcess(app, [...args, '--healthz-port=0']);
    processes.push(p);
    return p;
  };
  try {
    const gateway = spawn('stream-gateway', [
      '--listen-host=127.0.0.1',
      `--listen-port=${agentPort}`,
      `--internal-listen-port=${await freePort()}`,
      '--advertise-address=127.0.0.1',
      `--tls-cert=${tlsCert}`,
      `--tls-key=${tlsKey}`,
      `--root-ca-path=${ca}`,
      '--internal-allowed-clients=resource-proxy,redis-proxy',
      `--nats-url=${nats.url}`,
      `--nats-nkey-seed-path=${nats.seeds.gateway}`,
      `--metrics-port=${metrics.gateway}`,
    ]);
    await gateway.waitForLine((l) => l.msg === 'stream gateway started');
    const resourceProxy = spawn('resource-proxy', [
      '--listen-host=127.0.0.1',
      `--listen-port=${resourceProxyPort}`,
      `--resource-proxy-cert-path=${tlsCert}`,
      `--resource-proxy-key-path=${tlsKey}`,
      `--resource-proxy-ca-path=${ca}`,
      `--token-key-path=${jwt}`,
      `--metrics-port=${metrics.resourceProxy}`,
      ...gatewayClient(rpClient),
    ]);
    const redisProxy = spawn('redis-proxy', [
      '--listen-host=127.0.0.1',
      `--listen-port=${redisProxyPort}`,
      `--redis-server-address=127.0.0.1:${principalRedis.port}`,
      `--redis-password=${redisPassword}`,
      `--metrics-port=${metrics.redisProxy}`,
      ...gatewayClient(redisClient),
    ]);
    const agent = spawn('agent', [
      '--server-address=127.0.0.1',
      `--server-port=${agentPort}`,
      '--agent-name=agent-a',
      '--creds=mtls:',
      `--tls-client-cert=${agentCert.cert}`,
      `--tls-client-key=${agentCert.key}`,
      `--root-ca-path=${ca}`,
      `--kubeconfig=${kubeconfig}`,
      '--resource-proxy-filter=none',
      `--redis-addr=127.0.0.1:${agentRedis.port}`,
      `--metrics-port=${metrics.agent}`,
    ]);
    await resourceProxy.waitForLine((l) => l.msg === 'resource-proxy started');
    await redisProxy.waitForLine((l) => l.msg === 'redis-proxy started');
    // The agent's own line first: when it does not connect, its log is what says why. A loaded
    // machine (the whole suite in parallel) can take tens of seconds to load a process's modules.
    await agent.waitForLine((l) => l.msg === 'tunnel established', 60_000);
    await gateway.waitForLine((l) => l.msg === 'agent connected' && l.agent === 'agent-a');
    // The proxies learn presence from NATS after the gateway has logged the connection.
    for (const [proxy, port] of [
      ['resource-proxy', metrics.resourceProxy],
      ['redis-proxy', metrics.redisProxy],
    ] as const) {
      await waitFor(
        async () => (await metricValue(port, 'pullplane_proxy_known_agents', { proxy })) === 1,
        30_000,
      );
    }
    return {
      pki,
      gateway,
      resourceProxy,
      redisProxy,
      agent,
      metrics,
      resourceProxyPort,
      redisProxyPort,
      redisPassword,
      tokens,
      async close() {
        await Promise.all(processes.map((p) => p.stop()));
        for (const s of started.reverse()) await s.stop();
      },
    };
  } catch (err) {
    await Promise.all(processes.map((p) => p.stop()));
    for (const s of started.reverse()) await s.stop();
    throw err;
  }
}

/** Metric names a /metrics page declares (# TYPE lines), with histogram and summary series names. */
export async function exportedMetricNames(port: number): Promise<Set<string>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)/.exec(line);
    if (!m) continue;
    const [, name, type] = m;
    names.add(name!);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(`${name}${s}`);
  }
  return names;
}

/** The value of one series (labels matched exactly as given, others ignored), summed; 0 when absent. */
export async function metricValue(
  port: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!(line.startsWith(`${name} `) || line.startsWith(`${name}{`))) continue;
    if (want.every((w) => line.includes(w))) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}
