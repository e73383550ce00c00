import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AgentService, createAgentService, validateAgentConfig } from '@pullplane/agent-core';
import { parseAuthMethod } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway } from '@pullplane/gateway';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { createTestPki, type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentOptions } from '../src/options.js';

const logger = pino({ level: 'silent' });
let dir: string;
let gateway: Gateway;
let cluster: FakeKubeApiServer;
let files: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-app-'));
  const pki = await createTestPki();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const client = await pki.agentCert('edge-1');
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  cluster = await startFakeKubeApiServer();
  files = {
    ca: write('ca.crt', pki.ca.certPem),
    cert: write('tls.crt', client.certPem),
    key: write('tls.key', client.keyPem),
    kubeconfig: await cluster.writeKubeconfig(path.join(dir, 'kubeconfig')),
    token: write('token', 'not-a-real-token'),
  };
  gateway = new Gateway({
    bus: createMemoryBus(),
    logger,
    registry: new Registry(),
    agentListener: {
      host: '127.0.0.1',
      port: 0,
      tls: { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem, requireClientCert: true },
    },
    advertiseHost: '127.0.0.1',
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: () => ({ ok: false, code: 'NONE', reason: 'none' }),
    maxChunkSize: 65536,
    initialWindow: 262144,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
});
afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
  rmSync(dir, { recursive: true, force: true });
});

const load = (argv: string[], env: Record<string, string> = {}) =>
  loadConfig(agentOptions, {
    argv,
    env,
    paramsFileEnv: 'ARGOCD_AGENT_PARAMS_FILE',
    validate: (c) => validateAgentConfig(c, env),
  });

describe('agent configuration', () => {
  it('reports every missing piece of mTLS credentials at once', () => {
    expect(() => load(['--server-address=gw', '--creds=mtls:'])).toThrow(
      /needs --tls-client-cert and --tls-client-key/,
    );
    expect(() =>
      load([
        '--server-address=gw',
        '--creds=mtls:',
        '--insecure-plaintext',
        `--tls-client-cert=${files.cert}`,
        `--tls-client-key=${files.key}`,
      ]),
    ).toThrow(/cannot work with --insecure-plaintext/);
    expect(() => load(['--server-address=gw', '--creds=token:/nonexistent/token'])).toThrow(
      /token file cannot be read/,
    );
    expect(() => load(['--creds=header:'])).toThrow(/--server-address/);
  });

  it('reads argocd-agent-params keys from a ConfigMap file, with env and flags taking precedence', () => {
    const params = path.join(dir, 'params.yaml');
    writeFileSync(
      params,
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata: {name: argocd-agent-params}',
        'data:',
        '  agent.server.address: "principal.example.com"',
        '  agent.server.port: "443"',
        '  agent.creds: "header:"',
        '  agent.tls.client.insecure: "true"',
        '  agent.log.level: "debug"',
        '',
      ].join('\n'),
    );
    const { config, sources } = load(['--log-level=warn'], {
      ARGOCD_AGENT_PARAMS_FILE: params,
      ARGOCD_AGENT_REMOTE_PORT: '8443',
    });
    expect(config).toMatchObject({
      serverAddress: 'principal.example.com',
      serverPort: 8443,
      creds: 'header:',
      insecureTls: true,
      logLevel: 'warn',
    });
    expect(sources.serverPort).toMatchObject({ kind: 'env' });
    expect(sources.serverAddress).toMatchObject({ kind: 'params' });
  });
});

describe('agent app', () => {
  let app: AgentService;
  let registry: Registry;
  beforeAll(async () => {
    const { config } = load([
      '--server-address=127.0.0.1',
      `--server-port=${gateway.agentPort}`,
      '--creds=mtls:',
      `--tls-client-cert=${files.cert}`,
      `--tls-client-key=${files.key}`,
      `--root-ca-path=${files.ca}`,
      `--kubeconfig=${files.kubeconfig}`,
      '--heartbeat-interval=1s',
      '--metrics-port=0',
      '--healthz-port=0',
    ]);
    registry = createMetricsRegistry();
    app = createAgentService({ ...config }, { logger, registry });
    await app.start();
  });
  afterAll(() => app?.stop());

  it('connects out with its client certificate and reports ready with metrics', async () => {
    await expect.poll(() => gateway.session('edge-1') !== undefined, { timeout: 5_000 }).toBe(true);
    await expect.poll(() => app.agent.ready).toBe(true);
    expect(await registry.getSingleMetricAsString('pullplane_agent_tunnel_connected')).toMatch(
      /pullplane_agent_tunnel_connected 1/,
    );
  });

  it('serves the local Kubernetes API through the tunnel', async () => {
    const { text } = await import('node:stream/consumers');
    const s = gateway.openLocal('edge-1', {
      head: { case: 'http', value: { method: 'GET', path: '/version', headers: [] } },
    });
    expect((await s.responseHead()).status).toBe(200);
    expect(JSON.parse(await text(s))).toHaveProperty('gitVersion');
  });

  it('reconnects after the gateway drops the tunnel', async () => {
    gateway.kick('edge-1', 'test');
    await expect.poll(() => gateway.session('edge-1') !== undefined, { timeout: 5_000 }).toBe(true);
    expect(await registry.getSingleMetricAsString('pullplane_agent_tunnel_disconnects_total')).toMatch(
      /total [1-9]/,
    );
  });
});

describe('agent shutdown', () => {
  it('stops promptly whatever state the tunnel is in (connecting, established, backing off)', async () => {
    for (const delayMs of [0, 2, 5, 20, 80, 300]) {
      const { config } = load([
        '--server-address=127.0.0.1',
        `--server-port=${gateway.agentPort}`,
        '--creds=mtls:',
        `--tls-client-cert=${files.cert}`,
        `--tls-client-key=${files.key}`,
        `--root-ca-path=${files.ca}`,
        '--enable-resource-proxy=false',
        '--metrics-port=0',
        '--healthz-port=0',
      ]);
      const app = createAgentService(config, { logger, registry: createMetricsRegistry() });
      await app.start();
      await new Promise((r) => setTimeout(r, delayMs)); // wait-ok: the scenario (stop after running a while), not an event
      // A generous deadline, not a speed limit: a stop that waited out a reconnect backoff
      // (up to 30 s) or a hung dial would miss it.
      await expect(within(app.stop(), 15_000), `stop after ${delayMs} ms`).resolves.toBe('done');
      expect(app.agent.ready).toBe(false);
      // Nothing of it stays behind: the gateway sees its tunnel, if it had one, go away.
      await expect.poll(() => gateway.session('edge-1'), { timeout: 10_000 }).toBeUndefined();
    }
  }, 120_000);
});

/** 'done' when `p` settles, 'deadline' if it has not within `ms`. */
function within(p: Promise<unknown>, ms: number): Promise<'done' | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), ms);
  });
  return Promise.race([p.then(() => 'done' as const), deadline]).finally(() => clearTimeout(timer));
}
