import { once } from 'node:events';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { TokenAuthority } from '@pullplane/auth';
import {
  type AppProcess,
  createTestPki,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type NatsServerHandle,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
  type TestPki,
} from '@pullplane/testing';
import { Agent as HttpAgent, request } from 'undici';
import { WebSocketServer } from 'ws';

/** The resource proxy URL cluster registration would write into cluster Secrets. */
export const RESOURCE_PROXY_URL = 'https://argocd-agent-resource-proxy.argocd.svc:9090';

/** A real HTTP backend standing in for an in-cluster service (Grafana, a cost API…). */
export interface Backend {
  readonly url: string;
  readonly server: http.Server;
  readonly seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }>;
  /** SSE: the open event stream's response, to send events from the test. */
  sse: http.ServerResponse | undefined;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(256 * 1024, 0x61);

export async function startBackend(cluster: string): Promise<Backend> {
  const seen: Backend['seen'] = [];
  const b: Partial<Backend> & { seen: Backend['seen']; sse: Backend['sse'] } = { seen, sse: undefined };
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/big')) {
      // Written at the reader's pace: memory anywhere on the way stays flat only if every hop
      // honours backpressure.
      const total = Number(url.searchParams.get('bytes'));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          const n = Math.min(CHUNK.length, total - sent);
          sent += n;
          if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
      return;
    }
    if (url.pathname.endsWith('/events')) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      b.sse = res;
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('set-cookie', 'argocd.token=planted-by-backend');
      res.end(
        JSON.stringify({
          cluster,
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  // WebSocket echo, as an extension UI's live view would use.
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    seen.push({ method: 'WS', url: req.url ?? '', headers: req.headers });
    ws.on('message', (data, isBinary) =>
      ws.send(isBinary ? data : `${cluster}:${data.toString()}`, { binary: isBinary }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(b, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      server.close();
    },
  }) as Backend;
}

export interface Stack {
  dir: string;
  pki: TestPki;
  nats: NatsServerHandle;
  kube: FakeKubeApiServer;
  core: CoreV1Api;
  gateway: AppProcess;
  /** The gateway's agent listener. */
  agentPort: number;
  agents: Record<string, AppProcess>;
  backends: Record<string, Backend>;
  proxy: AppProcess;
  proxyPort: number;
  metricsPort: number;
  /** Path of an agent's extension map file. */
  mapFile(agent: string): string;
  writeMap(agent: string, yaml: string): void;
  startAgent(agent: string): Promise<AppProcess>;
  /** An HTTPS client presenting `cert` (default: the Argo CD server's caller certificate). */
  client(cert?: { certPem: string; keyPem: string } | null): HttpAgent;
  get(
    urlPath: string,
    headers: Record<string, string>,
    opts?: { cert?: { certPem: string; keyPem: string } | null; method?: string; body?: string },
  ): Promise<{ status: number; body: string; headers: Record<string, unknown> }>;
  argocdCert: { certPem: string; keyPem: string };
  /** Issues tokens the proxy verifies (audience extension-proxy). */
  tokens: TokenAuthority;
  close(): Promise<void>;
}

export const mapFor = (backend: Backend, extra = '') => `extensions:
  - name: metrics
    url: ${backend.url}/grafana/
    headers:
      - name: Authorization
        value: $grafana.token
  - name: down
    url: http://127.0.0.1:1/
${extra}`;

/**
 * Real processes: NATS, a gateway, two agents (each with its own backend, namespace and
 * extension map), and the extension proxy, wired with mTLS as in production.
 */
export async function startStack(): Promise<Stack> {
  const dir = makeTempDir('extension-proxy-');
  const pki = await createTestPki();
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const ca = write('ca.crt', pki.ca.certPem);
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const serverCrt = write('server.crt', server.certPem);
  const serverKey = write('server.key', server.keyPem);
  const nats = await startNatsServer();
  const kube = await startFakeKubeApiServer();
  const kubeconfig = await kube.writeKubeconfig(path.join(dir, 'kubeconfig'));
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  const backends: Record<string, Backend> = {};
  for (const [agent, ns] of [
    ['agent-a', 'cluster-a'],
    ['agent-b', 'cluster-b'],
  ] as const) {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'pullplane-agent-extensions' },
        stringData: { 'grafana.token': `Bearer token-of-${ns}` },
      },
    });
    backends[agent] = await startBackend(ns);
  }

  const agentPort = await freePort();
  const gateway = spawnAppProcess('stream-gateway', [
    '--listen-host=127.0.0.1',
    `--listen-port=${agentPort}`,
    `--tls-cert=${serverCrt}`,
    `--tls-key=${serverKey}`,
    `--root-ca-path=${ca}`,
    `--internal-listen-port=${await freePort()}`,
    '--advertise-address=127.0.0.1',
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
  ]);
  await gateway.waitForLine((l) => l.msg === 'stream gateway started');

  const mapFile = (agent: string) => path.join(dir, `${agent}-extensions.yaml`);
  const writeMap = (agent: string, yaml: string) => {
    // As kubelet swaps a ConfigMap volume: a new file renamed into place.
    writeFileSync(`${mapFile(agent)}.tmp`, yaml);
    renameSync(`${mapFile(agent)}.tmp`, mapFile(agent));
  };
  const agents: Record<string, AppProcess> = {};
  const startAgent = async (agent: string) => {
    const cert = await pki.agentCert(agent);
    if (!agents[agent] || agents[agent].child.exitCode !== null) {
      try {
        readFileSync(mapFile(agent));
      } catch {
        writeMap(agent, mapFor(backends[agent]!));
      }
    }
    const p = spawnAppProcess('agent', [
      `--agent-name=${agent}`,
      '--server-address=127.0.0.1',
      `--server-port=${agentPort}`,
      '--creds=mtls:',
      `--tls-client-cert=${write(`${agent}.crt`, cert.certPem)}`,
      `--tls-client-key=${write(`${agent}.key`, cert.keyPem)}`,
      `--root-ca-path=${ca}`,
      `--kubeconfig=${kubeconfig}`,
      `--namespace=${agent === 'agent-a' ? 'cluster-a' : 'cluster-b'}`,
      `--extensions-config-path=${mapFile(agent)}`,
      '--metrics-port=0',
      '--healthz-port=0',
      '--keep-alive-ping-interval=0',
    ]);
    agents[agent] = p;
    await p.waitForLine((l) => l.msg === 'tunnel established');
    return p;
  };
  await Promise.all(['agent-a', 'agent-b'].map(startAgent));

  const proxyCert = await pki.proxyCert('extension-proxy');
  const tokens = await TokenAuthority.generate({ audience: 'extension-proxy' });
  const proxyPort = await freePort();
  const metricsPort = await freePort();
  const proxy = spawnAppProcess('extension-proxy', [
    '--listen-host=127.0.0.1',
    `--listen-port=${proxyPort}`,
    `--tls-cert-path=${serverCrt}`,
    `--tls-key-path=${serverKey}`,
    `--client-ca-path=${ca}`,
    `--gateway-cert-path=${write('proxy.crt', proxyCert.certPem)}`,
    `--gateway-key-path=${write('proxy.key', proxyCert.keyPem)}`,
    `--gateway-ca-path=${ca}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    `--resource-proxy-url=${RESOURCE_PROXY_URL}`,
    `--metrics-port=${metricsPort}`,
    '--healthz-port=0',
    '--request-timeout=10s',
    `--token-key-path=${write('token.key', tokens.exportPrivateKeyPem())}`,
  ]);
  await proxy.waitForLine((l) => l.msg === 'extension-proxy started');
  const argocdCert = await pki.callerCert('argocd-server');

  const client = (cert: { certPem: string; keyPem: string } | null = argocdCert) =>
    new HttpAgent({
      connect: {
        ca: pki.ca.certPem,
        servername: 'localhost',
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
      },
    });
  const stack: Stack = {
    dir,
    pki,
    nats,
    kube,
    core,
    gateway,
    agentPort,
    agents,
    backends,
    proxy,
    proxyPort,
    metricsPort,
    mapFile,
    writeMap,
    startAgent,
    client,
    argocdCert,
    tokens,
    async get(urlPath, headers, opts = {}) {
      const dispatcher = client(opts.cert === undefined ? argocdCert : opts.cert);
      try {
        const res = await request(`https://127.0.0.1:${proxyPort}${urlPath}`, {
          method: (opts.method ?? 'GET') as 'GET',
          dispatcher,
          headers,
          ...(opts.body !== undefined ? { body: opts.body } : {}),
        });
        return { status: res.statusCode, body: await res.body.text(), headers: res.headers };
      } finally {
        await dispatcher.close();
      }
    },
    async close() {
      await proxy.stop();
      await Promise.all(Object.values(agents).map((a) => a.stop()));
      await gateway.stop();
      for (const b of Object.values(backends)) await b.close();
      await kube.close();
      await nats.stop();
    },
  };
  return stack;
}

/** The headers Argo CD's API server sends to an extension backend, for an app on `cluster`. */
export function argocdHeaders(
  target: { name?: string; url?: string },
  user = 'alice',
): Record<string, string> {
  return {
    'Argocd-Application-Name': 'argocd:guestbook',
    'Argocd-Project-Name': 'default',
    'Argocd-Namespace': 'argocd',
    ...(target.name ? { 'Argocd-Target-Cluster-Name': target.name } : {}),
    ...(target.url ? { 'Argocd-Target-Cluster-URL': target.url } : {}),
    'Argocd-Username': user,
    'Argocd-User-Groups': 'devs,ops',
  };
}

/** Resident memory of a process (Linux), in bytes. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb * 1024;
}
