// The agent started the way argocd-agent's agent Deployment starts it: its params ConfigMap,
// the env its Deployment derives from it (REDIS_ADDR, ARGOCD_AGENT_HEALTH_CHECK_PORT, …), and
// its client certificate and CA in the Secrets argocd-agent names, in the agent's namespace of
// its own cluster.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { parseAuthMethod } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { agentAuthenticator, Gateway, internalAuthenticator } from '@pullplane/gateway';
import {
  type AppProcess,
  ARGOCD_AGENT_AGENT_ENV,
  ARGOCD_AGENT_AGENT_PARAMS,
  createTestPki,
  envFromParams,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type RedisServerHandle,
  spawnAppProcess,
  startFakeKubeApiServer,
  startRedisServer,
  type TestPki,
} from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

const logger = pino({ level: 'silent' });
const b64 = (s: string) => Buffer.from(s).toString('base64');

let dir: string;
let pki: TestPki;
let cluster: FakeKubeApiServer;
let core: CoreV1Api;
let gateway: Gateway;
let redis: RedisServerHandle;
let kubeconfig: string;

beforeAll(async () => {
  dir = makeTempDir('agent-argocd-agent-');
  pki = await createTestPki();
  redis = await startRedisServer();
  cluster = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  kubeconfig = await cluster.writeKubeconfig(path.join(dir, 'kubeconfig'));
  const agentCert = await pki.agentCert('agent-a');
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: {
      metadata: { name: 'argocd-agent-client-tls' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(agentCert.certPem), 'tls.key': b64(agentCert.keyPem) },
    },
  });
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: { metadata: { name: 'argocd-agent-ca' }, data: { 'ca.crt': b64(pki.ca.certPem) } },
  });
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const tls = { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem };
  gateway = new Gateway({
    bus: createMemoryBus(),
    logger,
    registry: new Registry(),
    agentListener: { host: '127.0.0.1', port: 0, tls: { ...tls, requireClientCert: true } },
    advertiseHost: '127.0.0.1',
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls:subject:CN=([^,]+)')),
    authenticateInternal: internalAuthenticator(parseAuthMethod('mtls'), []).perCall,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
  await redis?.stop();
});

function start(params: Record<string, string>, extraEnv: Record<string, string> = {}): AppProcess {
  const data = { ...ARGOCD_AGENT_AGENT_PARAMS, ...params };
  const file = path.join(dir, `params-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-agent-params' }, data }),
  );
  return spawnAppProcess('agent', [], {
    ...envFromParams(ARGOCD_AGENT_AGENT_ENV, data),
    ARGOCD_AGENT_PARAMS_FILE: file,
    ARGOCD_AGENT_KUBECONFIG: kubeconfig,
    ...extraEnv,
  });
}

describe("the agent on argocd-agent's ConfigMap, env and Secrets", () => {
  it("refuses argocd-agent's shipped userpass: credentials, saying what to use instead", async () => {
    const agent = start({});
    expect(await agent.exited).toBe(2);
    const out = agent.logs.join('\n');
    expect(out).toContain("argocd-agent's userpass: credentials are not supported");
    expect(out).toContain('pullplane agent create');
    // The credentials file path is not echoed back.
    expect(out).not.toContain('/app/config/creds/userpass.creds');
  });

  it('connects with the certificate from argocd-agent-client-tls, reports what it ignores, and follows a rotation', async () => {
    const health = await freePort();
    const metrics = await freePort();
    const agent = start({
      'agent.creds': 'mtls:',
      'agent.server.address': '127.0.0.1',
      'agent.server.port': String(gateway.agentPort),
      'agent.redis.address': `127.0.0.1:${redis.port}`,
      'agent.healthz.port': String(health),
      'agent.metrics.port': String(metrics),
      'agent.keep-alive.interval': '0',
    });
    try {
      await agent.waitForLine((l) => l.msg === 'agent started');
      const connected = async (n: number) => {
        const deadline = Date.now() + 15_000;
        for (;;) {
          const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
          const value = (name: string) =>
            Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');
          if (value('argocd_agent_connections_total') >= n && value('argocd_agent_connection_status') === 1)
            return;
          if (Date.now() > deadline)
            throw new Error(`agent never connected ${n} time(s):\n${agent.logs.join('\n')}`);
          await new Promise((r) => setTimeout(r, 100)); // wait-ok: poll interval of a loop that waits for the event under a deadline
        }
      };
      await connected(1);
      // REDIS_ADDR (argocd-agent's env) was honoured, and ARGOCD_AGENT_HEALTH_CHECK_PORT.
      expect(agent.lines().find((l) => l.msg === 'agent started')?.redis).toBe(`127.0.0.1:${redis.port}`);
      expect((await fetch(`http://127.0.0.1:${health}/healthz`)).status).toBe(200);

      const reports = agent.lines().filter((l) => typeof l.configName === 'string');
      const by = (name: string) => reports.filter((l) => l.configName === name);
      expect(by('agent.mode')).toEqual([
        expect.objectContaining({
          level: 'warn',
          argocdAgentFeature: expect.stringContaining('application synchronisation'),
        }),
      ]);
      expect(by('ARGOCD_AGENT_MODE')).toHaveLength(1);
      expect(by('agent.websocket.enable')).toEqual([expect.objectContaining({ level: 'info' })]);
      expect(by('agent.server.address')).toEqual([]);

      // Rotate to a certificate the gateway refuses (no credential kind): the next tunnel uses
      // it and is refused; rotate to a good one: the agent is back.
      const secret = async (pair: { certPem: string; keyPem: string }) =>
        core.replaceNamespacedSecret({
          name: 'argocd-agent-client-tls',
          namespace: 'argocd',
          body: {
            metadata: { name: 'argocd-agent-client-tls', namespace: 'argocd' },
            type: 'kubernetes.io/tls',
            data: { 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem) },
          },
        });
      await secret(await pki.clientCert('agent-a'));
      await agent.waitForLine((l) => l.msg === 'material reloaded from secret');
      gateway.kick('agent-a', 'test: reconnect with the rotated certificate');
      await agent.waitForLine((l) => l.msg === 'gateway refused this agent');
      await secret(await pki.agentCert('agent-a'));
      await connected(2);
      const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
      expect(Number(/^argocd_agent_auth_failures_total (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
    } finally {
      await agent.stop();
    }
  }, 60_000);
});
