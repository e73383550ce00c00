import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import type { Agent } from '@pullplane/agent-core';
import { AGENT_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { GATEWAY_FORWARD_PATH, GATEWAY_LINK_PATH } from '@pullplane/proto';
import { freePort, type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  linkOnce,
  makePki,
  spawnApp,
  spawnGateway,
  startAgent,
  startBackend,
  type TestPki,
} from './support.js';

// Issue 8, items 1 and 2, from outside: real gateway processes, a real agent holding agent-a's
// tunnel, and gRPC clients holding whatever an attacker could hold.
let nats: NatsServerHandle;
let pki: TestPki;
let backend: Awaited<ReturnType<typeof startBackend>>;
const cleanup: Array<() => unknown> = [];

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  backend = await startBackend('agent-a');
}, 30_000);
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  backend?.close();
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

const tls = (c?: { cert: string; key: string }) =>
  credentials.createSsl(
    readFileSync(pki.ca),
    c ? readFileSync(c.key) : null,
    c ? readFileSync(c.cert) : null,
  );
const secretsPath = '/api/v1/namespaces/guestbook/configmaps';

// Each gateway gets its own agent name: they share NATS, and two tunnels for one name on two
// gateways would replace each other.
async function holdAgent(gw: GatewayProcess, name: string, token?: string): Promise<Agent> {
  const agent = await startAgent(name, gw.agentAddress, pki, backend.url, token);
  cleanup.push(() => agent.stop());
  await new Promise<void>((resolve) => agent.connector.once('connected', () => resolve()));
  return agent;
}

const logged = (gw: GatewayProcess, msg: string) =>
  gw.logs.flatMap((l) => {
    try {
      const line = JSON.parse(l) as Record<string, unknown>;
      return line.msg === msg ? [line] : [];
    } catch {
      return [];
    }
  });
/** The log line arrives over the process's stdout, possibly after the client saw the answer. */
const lastLogged = (gw: GatewayProcess, msg: string, count: number) =>
  expect.poll(
    () => {
      const lines = logged(gw, msg);
      return lines.length >= count ? lines.at(-1) : undefined;
    },
    { timeout: 10_000 },
  );

describe('one listener, one service (default --auth=mtls)', () => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await spawnGateway(pki, nats.url, ['--internal-allowed-clients=resource-proxy']);
    cleanup.push(() => gw.child.kill('SIGKILL'));
    await holdAgent(gw, 'agent-a');
  }, 30_000);

  it('answers the retired Forward UNIMPLEMENTED on both ports, and logs who tried', async () => {
    const agentB = await pki.agent('agent-b');
    const proxyCert = tls(await pki.proxy('resource-proxy'));
    const before = backend.requests.length;
    const fromAgent = await linkOnce(
      gw.agentAddress,
      tls(agentB),
      'agent-a',
      secretsPath,
      undefined,
      GATEWAY_FORWARD_PATH,
    );
    expect(fromAgent.error?.code).toBe(status.UNIMPLEMENTED);
    expect(fromAgent.status).toBeUndefined();
    // A proxy of the release before links learns why, instead of a crash or a silent refusal.
    const oldProxy = await linkOnce(
      gw.internalAddress,
      proxyCert,
      'agent-a',
      secretsPath,
      undefined,
      GATEWAY_FORWARD_PATH,
    );
    expect(oldProxy.error).toMatchObject({
      code: status.UNIMPLEMENTED,
      details: `${GATEWAY_FORWARD_PATH} is retired: upgrade the proxy to a release that uses ${GATEWAY_LINK_PATH}`,
    });
    expect(oldProxy.status).toBeUndefined();
    // The proxy's link, opened afterwards, carries the first request agent-a's cluster sees.
    const proxy = await linkOnce(gw.internalAddress, proxyCert, 'agent-a', '/ok');
    expect([proxy.status, proxy.body]).toEqual([200, 'agent:agent-a GET /ok']);
    expect(backend.requests.slice(before)).toEqual(['GET /ok']);
    await lastLogged(gw, 'refused a call to a service this listener does not serve', 2).toBeDefined();
    const [fromAgentLine, oldProxyLine] = logged(
      gw,
      'refused a call to a service this listener does not serve',
    );
    expect(fromAgentLine).toMatchObject({
      listener: 'agents',
      method: GATEWAY_FORWARD_PATH,
      identity: 'agent-b',
      credential: 'agent',
    });
    expect(String(fromAgentLine?.remote)).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(oldProxyLine).toMatchObject({
      listener: 'internal',
      method: GATEWAY_FORWARD_PATH,
      identity: 'resource-proxy',
    });
  });

  it('serves Link only on the internal port and only to a proxy credential', async () => {
    const agentB = tls(await pki.agent('agent-b'));
    const before = backend.requests.length;
    const onAgentPort = await linkOnce(gw.agentAddress, agentB, 'agent-a', secretsPath);
    expect(onAgentPort.error?.code).toBe(status.UNIMPLEMENTED);
    const onInternal = await linkOnce(gw.internalAddress, agentB, 'agent-a', secretsPath);
    expect(onInternal.error?.code).toBe(status.UNAVAILABLE);
    expect(onInternal.status).toBeUndefined();
    // The proxy's link, opened afterwards, carries the first request agent-a's cluster sees.
    const proxy = tls(await pki.proxy('resource-proxy'));
    const ok = await linkOnce(gw.internalAddress, proxy, 'agent-a', '/via-link');
    expect([ok.status, ok.body]).toEqual([200, 'agent:agent-a GET /via-link']);
    expect(backend.requests.slice(before)).toEqual(['GET /via-link']);
    await expect
      .poll(
        () =>
          logged(gw, 'refused a call to a service this listener does not serve').some(
            (l) => l.method === GATEWAY_LINK_PATH && l.identity === 'agent-b',
          ),
        { timeout: 10_000 },
      )
      .toBe(true);
  });

  it("refuses agent-b's certificate on the internal port: it is not a proxy credential", async () => {
    const agentB = await pki.agent('agent-b');
    const out = await linkOnce(gw.internalAddress, tls(agentB), 'agent-a', secretsPath);
    expect(out.error?.code).toBe(status.UNAVAILABLE);
    expect(out.status).toBeUndefined();
    await lastLogged(gw, 'rejected TLS client: identity not allowed', 1).toMatchObject({
      listener: 'internal',
      code: 'AUTH_CREDENTIAL_WRONG_KIND',
    });
  });

  it('refuses no certificate on either port', async () => {
    for (const address of [gw.agentAddress, gw.internalAddress]) {
      const out = await linkOnce(address, tls(), 'agent-a', secretsPath);
      expect(out.error?.code, address).toBe(status.UNAVAILABLE);
      expect(out.status).toBeUndefined();
    }
    await expect
      .poll(() => logged(gw, 'rejected TLS client: client certificate not accepted').map((l) => l.listener), {
        timeout: 10_000,
      })
      .toEqual(['agents', 'internal']);
  });

  it('refuses a proxy certificate that is not on --internal-allowed-clients', async () => {
    const other = await pki.proxy('redis-proxy');
    const out = await linkOnce(gw.internalAddress, tls(other), 'agent-a', secretsPath);
    expect(out.error?.code).toBe(status.UNAVAILABLE);
    await lastLogged(gw, 'rejected TLS client: identity not allowed', 2).toMatchObject({
      code: 'INTERNAL_CALLER_NOT_ALLOWED',
    });
  });

  it('refuses Connect on the internal port, even to an allowed proxy', async () => {
    const { dialConnect } = await import('./in-process.js');
    const out = await dialConnect(gw.internalAddress, tls(await pki.proxy('resource-proxy')));
    expect(out.welcome).toBeUndefined();
    expect(out.error?.code).toBe(status.UNIMPLEMENTED);
    await lastLogged(gw, 'refused a call to a service this listener does not serve', 2).toMatchObject({
      listener: 'internal',
      method: '/pullplane.tunnel.v1.AgentTunnel/Connect',
      identity: 'resource-proxy',
    });
  });
});

describe('one listener, one service (--auth=token: the agent port asks for no certificate)', () => {
  it('refuses Link on the agent port to a client with no credentials at all', async () => {
    const authority = await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE });
    const keyPath = path.join(pki.dir, 'agent-jwt.key');
    writeFileSync(keyPath, authority.exportPrivateKeyPem());
    const gw = await spawnGateway(pki, nats.url, ['--auth=token', `--token-key-path=${keyPath}`]);
    cleanup.push(() => gw.child.kill('SIGKILL'));
    const before = backend.requests.length;
    await holdAgent(gw, 'agent-t', await authority.issue('agent-t'));
    const bare = await linkOnce(gw.agentAddress, tls(), 'agent-t', secretsPath);
    expect(bare.error?.code).toBe(status.UNIMPLEMENTED);
    // Not even an agent's own token turns the agent port into a Link port.
    const md = new Metadata();
    md.set('authorization', `Bearer ${await authority.issue('agent-b')}`);
    const withToken = await linkOnce(gw.agentAddress, tls(), 'agent-t', secretsPath, md);
    expect(withToken.error?.code).toBe(status.UNIMPLEMENTED);
    expect(backend.requests.slice(before)).toEqual([]);
    await expect
      .poll(
        () => logged(gw, 'refused a call to a service this listener does not serve').map((l) => l.identity),
        {
          timeout: 10_000,
        },
      )
      .toEqual([undefined, 'agent-b']);
  });
});

describe('a plaintext gateway (behind a mesh)', () => {
  it('refuses to start with the default --internal-auth=mtls, naming the fix', async () => {
    const app = spawnApp('stream-gateway', [
      '--insecure-plaintext',
      '--listen-host=127.0.0.1',
      '--auth=istio',
      '--mesh-trust-domain=cluster.local',
      '--mesh-agent-namespaces=argocd',
      '--internal-allowed-clients=argocd-server',
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      '--metrics-port=0',
      '--healthz-port=0',
    ]);
    const started = app
      .waitForLine((l) => l.msg === 'stream gateway started', 20_000)
      .then(
        () => 'started',
        () => 'no start',
      );
    expect(await Promise.race([app.exited, started])).toBe(2);
    expect(app.logs.join('\n')).toMatch(
      /--insecure-plaintext with --internal-auth=mtls would leave Link calls on the internal listener unauthenticated.*set --internal-auth=istio, linkerd or header:<name>:<regex>/,
    );
  });

  it('authenticates and authorises every Link by the mesh identity header', async () => {
    const listenPort = await freePort();
    const internalPort = await freePort();
    const app = spawnApp('stream-gateway', [
      '--insecure-plaintext',
      '--listen-host=127.0.0.1',
      `--listen-port=${listenPort}`,
      `--internal-listen-port=${internalPort}`,
      '--advertise-address=127.0.0.1',
      '--auth=header:x-agent:^([a-z0-9-]+)$',
      '--internal-auth=istio',
      '--mesh-trust-domain=cluster.local',
      '--internal-mesh-namespaces=argocd',
      '--internal-allowed-clients=argocd-agent-resource-proxy',
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      '--metrics-port=0',
      '--healthz-port=0',
    ]);
    cleanup.push(() => app.child.kill('SIGKILL'));
    await app.waitForLine((l) => l.msg === 'stream gateway started');
    // agent-a dials in through a "sidecar" that sets its identity header.
    const { Agent } = await import('@pullplane/agent-core');
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      { name: 'c', server: backend.url, skipTLSVerify: true },
      { name: 'u', token: 'x' },
    );
    const agent = new Agent({
      agentName: 'agent-p',
      agentVersion: 'test',
      target: `127.0.0.1:${listenPort}`,
      credentials: tunnelCredentials.insecure(),
      metadata: () => {
        const m = new Metadata();
        m.set('x-agent', 'agent-p');
        return m;
      },
      heartbeatIntervalMs: 1_000,
      keepAlivePingIntervalMs: 0,
      kubeConfig: kc,
      enableResourceProxy: true,
      resourceProxyFilter: 'none',
      logger: (await import('./support.js')).silent,
    });
    agent.start();
    cleanup.push(() => agent.stop());
    await new Promise<void>((resolve) => agent.connector.once('connected', () => resolve()));

    const internal = `127.0.0.1:${internalPort}`;
    const xfcc = (sa: string) => {
      const m = new Metadata();
      m.set(
        'x-forwarded-client-cert',
        `By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-principal;URI=spiffe://cluster.local/ns/argocd/sa/${sa}`,
      );
      return m;
    };
    const before = backend.requests.length;
    const none = await linkOnce(internal, credentials.createInsecure(), 'agent-p', secretsPath);
    expect(none.error?.code).toBe(status.UNAUTHENTICATED);
    const evil = await linkOnce(internal, credentials.createInsecure(), 'agent-p', secretsPath, xfcc('evil'));
    expect(evil.error?.code).toBe(status.PERMISSION_DENIED);
    const ok = await linkOnce(
      internal,
      credentials.createInsecure(),
      'agent-p',
      '/ok',
      xfcc('argocd-agent-resource-proxy'),
    );
    expect([ok.status, ok.body]).toEqual([200, 'agent:agent-a GET /ok']);
    expect(backend.requests.slice(before)).toEqual(['GET /ok']);
    await expect
      .poll(
        () =>
          app
            .lines()
            .filter((l) => l.msg === 'internal caller rejected')
            .map((l) => l.code),
        { timeout: 10_000 },
      )
      .toEqual(['AUTH_HEADER_MISSING', 'INTERNAL_CALLER_NOT_ALLOWED']);
  });
});
