import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ChannelCredentials, Client, Metadata, type ServiceError } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { connectNatsBus, natsConnectionSecurity } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { type CredentialKind, createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import { decodeFrame, encodeFrame, type Frame, frame, GATEWAY_LINK_PATH } from '@pullplane/proto';
import { AgentRouter, type AgentRouterOptions } from '@pullplane/router';
import { builtAppMain, freePort, makeTempDir } from '@pullplane/testing';
import pino from 'pino';

export const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const gatewayMain = path.join(root, 'apps/stream-gateway/dist/main.js');

/** Fails early when the built gateway is missing or older than the sources. */
export function requireBuild(): void {
  builtAppMain('stream-gateway');
}

export interface TestPki {
  dir: string;
  ca: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  /** A client certificate with no credential kind (other tooling's, or a legacy one). */
  client(cn: string): Promise<{ cert: string; key: string }>;
  /** An agent's certificate: opens its tunnel and nothing else. */
  agent(name: string): Promise<{ cert: string; key: string }>;
  /** A caller's (kubeconfig's) certificate for one agent's cluster. */
  caller(agent: string): Promise<{ cert: string; key: string }>;
  /** A proxy replica's certificate for the internal listener. */
  proxy(name: string): Promise<{ cert: string; key: string }>;
}

/** A CA, a gateway server certificate for 127.0.0.1, and client certificates on demand. */
export async function makePki(): Promise<TestPki> {
  const dir = makeTempDir('pullplane-pki-');
  const ca = await createCertificateAuthority({ commonName: 'pullplane-test-ca' });
  const server = await issueCertificate(ca, {
    commonName: 'gateway',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'both',
  });
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const issue = async (cn: string, kind?: CredentialKind) => {
    const c = await issueCertificate(ca, { commonName: cn, usage: 'client', ...(kind ? { kind } : {}) });
    const file = `${cn}.${kind ?? 'unmarked'}`;
    return { cert: write(`${file}.crt`, c.certPem), key: write(`${file}.key`, c.keyPem) };
  };
  return {
    dir,
    ca: write('ca.crt', ca.certPem),
    caKey: write('ca.key', ca.keyPem),
    serverCert: write('tls.crt', server.certPem),
    serverKey: write('tls.key', server.keyPem),
    client: (cn) => issue(cn),
    agent: (name) => issue(name, 'agent'),
    caller: (agent) => issue(agent, 'caller'),
    proxy: (name) => issue(name, 'proxy'),
  };
}

export interface GatewayProcess {
  gatewayId: string;
  agentAddress: string;
  internalAddress: string;
  logs: string[];
  child: ChildProcess;
  exited: Promise<number | null>;
}

/**
 * Spawns the built stream gateway and waits for its "stream gateway started" line. Without NATS
 * credentials in `extra` it runs with --nats-insecure (an open test NATS).
 */
export async function spawnGateway(
  pki: TestPki,
  natsUrl: string,
  extra: string[] = [],
): Promise<GatewayProcess> {
  requireBuild();
  const listenPort = await freePort();
  const internalPort = await freePort();
  const child = spawn(
    process.execPath,
    [
      gatewayMain,
      '--listen-host=127.0.0.1',
      `--listen-port=${listenPort}`,
      `--internal-listen-port=${internalPort}`,
      '--advertise-address=127.0.0.1',
      `--tls-cert=${pki.serverCert}`,
      `--tls-key=${pki.serverKey}`,
      `--root-ca-path=${pki.ca}`,
      `--nats-url=${natsUrl}`,
      ...(extra.some((a) => /^--nats-(nkey|creds|user|tls-cert)/.test(a)) ? [] : ['--nats-insecure']),
      '--metrics-port=0',
      '--healthz-port=0',
      '--drain-timeout=2s',
      '--presence-ttl=30s',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: string[] = [];
  let gatewayId = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let buf = '';
    const onLine = (line: string) => {
      logs.push(line);
      if (line.includes('"stream gateway started"')) {
        gatewayId = (JSON.parse(line) as { gatewayId: string }).gatewayId;
        resolve();
      }
    };
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i = buf.indexOf('\n');
      while (i >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
        i = buf.indexOf('\n');
      }
    });
    child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
    void exited.then((code) =>
      reject(new Error(`gateway exited (${code}) before it was ready:\n${logs.join('\n')}`)),
    );
    setTimeout(() => reject(new Error(`gateway not ready in 20 s:\n${logs.join('\n')}`)), 20_000).unref();
  });
  return {
    gatewayId,
    agentAddress: `127.0.0.1:${listenPort}`,
    internalAddress: `127.0.0.1:${internalPort}`,
    logs,
    child,
    exited,
  };
}

/**
 * A stand-in for an agent's Kubernetes API: answers with the agent's name, streams
 * forever on /stream and slowly on /slow.
 */
export async function startBackend(
  name: string,
): Promise<{ url: string; requests: string[]; close(): void }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url?.startsWith('/stream')) {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) {
          /* until backpressure */
        }
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
      return;
    }
    if (req.url?.startsWith('/slow')) {
      // /slow ticks forever; /slow?n=5 sends five ticks and ends.
      const limit = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? Number.POSITIVE_INFINITY);
      res.writeHead(200);
      let sent = 0;
      const t = setInterval(() => {
        res.write('tick\n');
        if (++sent >= limit) {
          clearInterval(t);
          res.end();
        }
      }, 100);
      res.on('close', () => clearInterval(t));
      return;
    }
    res.end(`agent:${name} ${req.method} ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

export async function startAgent(
  name: string,
  target: string,
  pki: TestPki,
  backendUrl: string,
  /** Dial with this bearer token (and no client certificate) instead of an agent certificate. */
  token?: string,
): Promise<Agent> {
  const { cert, key } = await pki.agent(name);
  const { readFileSync } = await import('node:fs');
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'local', server: backendUrl, skipTLSVerify: true },
    { name: 'sa', token: 'x' },
  );
  const agent = new Agent({
    agentName: name,
    agentVersion: 'test',
    target,
    serverNameOverride: 'localhost',
    credentials: token
      ? tunnelCredentials.tls(readFileSync(pki.ca))
      : tunnelCredentials.tls(readFileSync(pki.ca), readFileSync(key), readFileSync(cert)),
    ...(token
      ? {
          metadata: () => {
            const m = new Metadata();
            m.set('authorization', `Bearer ${token}`);
            return m;
          },
        }
      : {}),
    heartbeatIntervalMs: 1_000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: true,
    // These tests exercise the transport against a plain HTTP backend, not the managed rule.
    resourceProxyFilter: 'none',
    logger: silent,
    backoffInitialMs: 100,
    backoffMaxMs: 1_000,
  });
  agent.start();
  return agent;
}

/** A proxy replica's routing client: holds no agent, reaches gateways over mTLS. */
export async function startRouter(
  natsUrl: string,
  pki: TestPki,
  /** The proxy role's nkey seed, for a NATS that requires credentials. */
  natsSeedPath?: string,
  /** Router options of the test's choosing (links, heartbeats, probes). */
  extra: Partial<AgentRouterOptions> = {},
): Promise<{ router: AgentRouter; close(): Promise<void> }> {
  const { readFileSync } = await import('node:fs');
  const { cert, key } = await pki.proxy('resource-proxy');
  const bus = await connectNatsBus({
    servers: natsUrl,
    name: 'test-router',
    ...(natsSeedPath
      ? {
          security: natsConnectionSecurity({ natsUrl, natsNkeySeedPath: natsSeedPath, natsInsecure: false }),
          creates: [],
        }
      : {}),
  });
  const router = new AgentRouter({
    bus,
    logger: silent,
    credentials: tunnelCredentials.tls(readFileSync(pki.ca), readFileSync(key), readFileSync(cert)),
    routeTimeoutMs: 5_000,
    ...extra,
  });
  await router.start();
  return {
    router,
    async close() {
      router.stop();
      await bus.close();
    },
  };
}

export interface LinkOutcome {
  error?: ServiceError;
  status?: number;
  body?: string;
  reset?: string;
}

/**
 * Opens a GatewayForward.Link on `address` the way an attacker (or a proxy) would: one Open for
 * `agent`, then whatever comes back. `method` calls another method the same way (the retired
 * Forward, Link on the wrong listener).
 */
export function linkOnce(
  address: string,
  creds: ChannelCredentials,
  agent: string,
  path: string,
  md = new Metadata(),
  method = GATEWAY_LINK_PATH,
): Promise<LinkOutcome> {
  const client = new Client(address, creds, { 'grpc.ssl_target_name_override': 'localhost' });
  const call = client.makeBidiStreamRequest<Frame, Frame>(method, encodeFrame, decodeFrame, md);
  call.write(
    frame({
      case: 'open',
      value: { streamId: 1, agent, head: { case: 'http', value: { method: 'GET', path, headers: [] } } },
    }),
  );
  const out: LinkOutcome = {};
  let body = '';
  return new Promise((resolve) => {
    let finished = false;
    // Ending a link would end its streams: it is cancelled once the answer is in.
    const done = () => {
      if (finished) return;
      finished = true;
      call.cancel();
      client.close();
      resolve(out);
    };
    const onFrame = (f: Frame) => {
      if (f.kind.case === 'batch') return f.kind.value.frames.forEach(onFrame);
      // A head or a data frame may carry body bytes and the end (protocol v2), as the proxy's
      // link streams accept them.
      const k = f.kind;
      if (k.case === 'responseHead' || k.case === 'data') {
        if (k.case === 'responseHead') out.status = k.value.status;
        const chunk = k.case === 'responseHead' ? k.value.body : k.value.chunk;
        body += Buffer.from(chunk).toString();
        if (k.value.endStream) out.body = body;
      } else if (k.case === 'end') out.body = body;
      else if (f.kind.case === 'reset') out.reset = f.kind.value.message;
      if (out.body !== undefined || out.reset !== undefined) done();
    };
    call.on('data', onFrame);
    call.on('error', (error: ServiceError) => {
      out.error = error;
      done();
    });
    call.on('end', done);
  });
}

/** A running app process and everything it logged. */
export interface AppProcess {
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
  /** Parsed JSON log lines so far. */
  lines(): Array<Record<string, unknown>>;
  /** Resolves with the first log line matching, waiting for it if needed. */
  waitForLine(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
}

/** Spawns a built app (`apps/<app>/dist/main.js`) and collects its output. */
export function spawnApp(app: string, args: string[]): AppProcess {
  const main = builtAppMain(app);
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const waiters: Array<() => void> = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      logs.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (d: Buffer) => {
    logs.push(d.toString());
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = () =>
    logs.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return {
    child,
    logs,
    exited,
    lines,
    async waitForLine(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines().find(match);
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`no matching log line from ${app}:\n${logs.join('\n')}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200).unref(); // wait-ok: re-check bound; woken early by the log event
        });
      }
    },
  };
}

/** One sample of a Prometheus metric (summed over labels) from a /metrics endpoint. */
export async function metricValue(port: number, name: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

export const get = (path: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
});
