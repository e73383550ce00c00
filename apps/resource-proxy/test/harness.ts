import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, type ExecPolicy, type SessionRecord } from '@pullplane/agent-core';
import { parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { Gateway, internalAuthenticator } from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  createResourceProxyService,
  type ResourceProxyService,
  renderKubeconfig,
  validateResourceProxyConfig,
} from '@pullplane/resource-proxy';
import {
  createTestPki,
  type FakeKubeApiServer,
  seedArgoDemo,
  startFakeKubeApiServer,
} from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent as HttpAgent, request } from 'undici';
import { resourceProxyOptions } from '../src/options.js';

export const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

export interface Harness {
  bus: Bus;
  dir: string;
  cluster: FakeKubeApiServer;
  gateway: Gateway;
  agent: Agent;
  app: ResourceProxyService;
  /** The proxy app's metrics. */
  registry: Registry;
  /** The proxy app's log lines (info and above), parsed. */
  lines: Array<Record<string, unknown>>;
  proxyUrl: string;
  /** kubectl config using a caller certificate for agent-a (direct mode). */
  certKubeconfig: string;
  /** kubectl config using a caller token scoped to agent-a, server URL with /clusters/agent-a. */
  tokenKubeconfig: string;
  tokens: TokenAuthority;
  pki: Awaited<ReturnType<typeof createTestPki>>;
  /** An HTTPS call to the proxy; `as` picks the client certificate (none by default). */
  call(
    method: string,
    urlPath: string,
    opts?: {
      cert?: { certPem: string; keyPem: string };
      token?: string;
      body?: string;
      headers?: Record<string, string>;
    },
  ): Promise<{ status: number; body: string; headers: Record<string, unknown> }>;
  /** Writes raw bytes over TLS and returns everything the proxy answered. */
  raw(request: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * One agent with a simulated cluster, a gateway with an mTLS internal listener, and the
 * resource proxy app reaching that gateway over the network like a separate replica would.
 */
export async function startHarness(
  agentOptions: {
    enableResourceProxy?: boolean;
    resourceProxyFilter?: 'managed' | 'none';
    /** Callers allowed to impersonate (proxy); the agent then forwards the headers too. */
    impersonators?: string[];
    /** exec, attach and port-forward on the agent (off by default, as on a real one). */
    exec?: Partial<ExecPolicy>;
    /** Told of each exec, attach or port-forward session the agent ended or refused. */
    onSession?: (r: SessionRecord) => void;
    /** The proxy's --request-timeout (default 2s). */
    requestTimeout?: string;
  } = {},
): Promise<Harness> {
  const dir = mkdtempSync(path.join(tmpdir(), 'resource-proxy-'));
  const pki = await createTestPki();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const caFile = write('ca.crt', pki.ca.certPem);
  const cluster = await startFakeKubeApiServer({ token: 'agent-sa-token' });
  seedArgoDemo(cluster.store);

  const bus = createMemoryBus();
  const tls = { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem };
  const internal = internalAuthenticator(parseAuthMethod('mtls'), ['resource-proxy']);
  const gateway = new Gateway({
    bus,
    logger,
    registry: new Registry(),
    agentListener: { host: '127.0.0.1', port: 0, tls: { ...tls, requireClientCert: true } },
    internalListener: {
      host: '127.0.0.1',
      port: 0,
      tls: {
        ...tls,
        requireClientCert: true,
        ...(internal.perConnection ? { authorize: internal.perConnection } : {}),
      },
    },
    advertiseHost: '127.0.0.1',
    authenticateAgent: (await import('@pullplane/gateway')).agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: internal.perCall,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();

  const agentCert = await pki.agentCert('agent-a');
  const callerCert = await pki.callerCert('agent-a');
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(
      Buffer.from(pki.ca.certPem),
      Buffer.from(agentCert.keyPem),
      Buffer.from(agentCert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: agentOptions.enableResourceProxy ?? true,
    ...(agentOptions.resourceProxyFilter ? { resourceProxyFilter: agentOptions.resourceProxyFilter } : {}),
    allowImpersonation: Boolean(agentOptions.impersonators),
    ...(agentOptions.exec ? { exec: agentOptions.exec } : {}),
    ...(agentOptions.onSession ? { onSession: agentOptions.onSession } : {}),
    logger,
  });
  agent.start();

  const tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  const proxyClient = await pki.proxyCert('resource-proxy');
  const { config } = loadConfig(resourceProxyOptions, {
    argv: [
      '--listen-host=127.0.0.1',
      '--listen-port=0',
      '--metrics-port=0',
      '--healthz-port=0',
      `--resource-proxy-cert-path=${write('tls.crt', server.certPem)}`,
      `--resource-proxy-key-path=${write('tls.key', server.keyPem)}`,
      `--resource-proxy-ca-path=${caFile}`,
      `--token-key-path=${write('jwt.key', tokens.exportPrivateKeyPem())}`,
      `--gateway-cert-path=${write('proxy.crt', proxyClient.certPem)}`,
      `--gateway-key-path=${write('proxy.key', proxyClient.keyPem)}`,
      `--gateway-ca-path=${caFile}`,
      `--request-timeout=${agentOptions.requestTimeout ?? '2s'}`,
      '--max-request-body=65536',
      // The bus is given below: no NATS credentials needed.
      '--nats-insecure',
      ...(agentOptions.impersonators
        ? [`--impersonation-allowed-callers=${agentOptions.impersonators.join(',')}`]
        : []),
    ],
    env: {},
    validate: (c) => validateResourceProxyConfig(c, {}),
  });
  const registry = new Registry();
  const lines: Array<Record<string, unknown>> = [];
  const appLogger = pino(
    { level: 'info' },
    {
      write(line: string) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
        if (process.env.TEST_LOG_LEVEL) process.stderr.write(line);
      },
    },
  );
  const app = createResourceProxyService(config, { logger: appLogger, registry, bus });
  await app.start();
  const proxyUrl = `https://127.0.0.1:${app.proxy!.port}`;
  const deadline = Date.now() + 10_000;
  while (!app.router!.lookup('agent-a')) {
    if (Date.now() > deadline) throw new Error('agent-a never connected');
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }

  const certKubeconfig = write(
    'cert.kubeconfig',
    renderKubeconfig([
      {
        name: 'agent-a',
        server: proxyUrl,
        caPem: pki.ca.certPem,
        clientCertPem: callerCert.certPem,
        clientKeyPem: callerCert.keyPem,
      },
    ]),
  );
  const tokenKubeconfig = write(
    'token.kubeconfig',
    renderKubeconfig([
      {
        name: 'agent-a',
        server: `${proxyUrl}/clusters/agent-a`,
        caPem: pki.ca.certPem,
        token: await tokens.issue('kubectl-user', { agents: ['agent-a'] }),
      },
    ]),
  );

  return {
    bus,
    dir,
    cluster,
    gateway,
    agent,
    app,
    registry,
    lines,
    proxyUrl,
    certKubeconfig,
    tokenKubeconfig,
    tokens,
    pki,
    async call(method, urlPath, opts = {}) {
      const dispatcher = new HttpAgent({
        connect: {
          ca: pki.ca.certPem,
          ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
        },
      });
      try {
        const res = await request(`${proxyUrl}${urlPath}`, {
          method: method as 'GET',
          dispatcher,
          headers: {
            ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
            ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...opts.headers,
          },
          ...(opts.body !== undefined ? { body: opts.body } : {}),
        });
        return { status: res.statusCode, body: await res.body.text(), headers: res.headers };
      } finally {
        await dispatcher.close();
      }
    },
    raw(requestText) {
      return new Promise((resolve, reject) => {
        const socket = tlsConnect(
          { host: '127.0.0.1', port: app.proxy!.port, ca: pki.ca.certPem, servername: 'localhost' },
          () => socket.write(requestText),
        );
        let out = '';
        socket.on('data', (d: Buffer) => {
          out += d.toString();
        });
        socket.on('end', () => resolve(out));
        socket.on('error', reject);
      });
    },
    async close() {
      await app.stop();
      await agent.stop();
      await gateway.stop();
      await cluster.close();
    },
  };
}
