// The resource proxy configured from argocd-agent's ConfigMap, env and Secrets, serving the
// cluster Secrets argocd-agent wrote: self-registered ones (RS512 token plus a shared client
// certificate, token checked first), argocd-agentctl's (a per-agent certificate with no
// credential kind), and the same Secrets once adopted. And the attacks that matter: an agent's
// certificate (argocd-agent's or ours) never works as a caller, an agent's access token is
// not a caller token, one agent's token does not reach another.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway, internalAuthenticator } from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { ClusterRegistrar, fingerprint } from '@pullplane/registration';
import {
  createResourceProxyService,
  type ResourceProxyService,
  validateResourceProxyConfig,
} from '@pullplane/resource-proxy';
import {
  ARGOCD_AGENT_PRINCIPAL_ENV,
  ARGOCD_AGENT_PRINCIPAL_PARAMS,
  type ArgocdAgentSecrets,
  argocdAgentSecrets,
  createTestPki,
  envFromParams,
  type FakeKubeApiServer,
  makeTempDir,
  seedArgoDemo,
  startFakeKubeApiServer,
  type TestPki,
} from '@pullplane/testing';
import { SignJWT } from 'jose';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { resourceProxyOptions } from '../src/options.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));
const decode = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();

let dir: string;
let pki: TestPki;
let secrets: ArgocdAgentSecrets;
let controlPlane: FakeKubeApiServer;
let core: CoreV1Api;
let kubeconfig: string;
let bus: Bus;
let gateway: Gateway;
const agents: Agent[] = [];
const clusters: FakeKubeApiServer[] = [];
let adopting: ResourceProxyService;
let plain: ResourceProxyService;

/** The resource proxy from argocd-agent's params and env, plus our own flags for reaching gateways. */
async function startProxy(adopt: boolean): Promise<ResourceProxyService> {
  const data = { ...ARGOCD_AGENT_PRINCIPAL_PARAMS };
  const params = path.join(dir, `params-${adopt}.yaml`);
  writeFileSync(
    params,
    stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-agent-params' }, data }),
  );
  const proxyCert = await pki.proxyCert('resource-proxy');
  const write = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  const { config } = loadConfig(resourceProxyOptions, {
    argv: [
      '--listen-host=127.0.0.1',
      '--listen-port=0',
      '--metrics-port=0',
      '--healthz-port=0',
      `--gateway-cert-path=${write('proxy.crt', proxyCert.certPem)}`,
      `--gateway-key-path=${write('proxy.key', proxyCert.keyPem)}`,
      `--gateway-ca-path=${write('ca.crt', pki.ca.certPem)}`,
      '--gateway-server-name=localhost',
      `--params-file=${params}`,
      '--nats-insecure',
    ],
    env: {
      ...envFromParams(ARGOCD_AGENT_PRINCIPAL_ENV, data),
      ARGOCD_PRINCIPAL_KUBECONFIG: kubeconfig,
      ...(adopt ? { ARGOCD_PRINCIPAL_ADOPT_ARGOCD_AGENT_CLUSTERS: 'true' } : {}),
    },
    validate: (c) => validateResourceProxyConfig(c, {}),
  });
  const app = createResourceProxyService(config, { logger, registry: new Registry(), bus });
  await app.start();
  for (const name of ['agent-a', 'agent-b']) {
    const deadline = Date.now() + 10_000;
    while (!app.router!.lookup(name)) {
      if (Date.now() > deadline) throw new Error(`${name} never showed up`);
      await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
    }
  }
  return app;
}

beforeAll(async () => {
  dir = makeTempDir('rp-argocd-agent-');
  pki = await createTestPki();
  // The control plane's API: argocd-agent's Secrets, read by name.
  controlPlane = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(controlPlane.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  secrets = await argocdAgentSecrets(pki, { ctl: ['agent-a'], selfRegistered: ['agent-b'] });
  for (const s of secrets.manifests)
    await core.createNamespacedSecret({ namespace: 'argocd', body: s as V1Secret });
  kubeconfig = await controlPlane.writeKubeconfig(path.join(dir, 'control-plane.kubeconfig'));

  bus = createMemoryBus();
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const tls = { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem };
  const internal = internalAuthenticator(parseAuthMethod('mtls'), ['resource-proxy']);
  gateway = new Gateway({
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
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: internal.perCall,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
  for (const name of ['agent-a', 'agent-b']) {
    const cluster = await startFakeKubeApiServer({ token: `${name}-sa` });
    seedArgoDemo(cluster.store);
    clusters.push(cluster);
    const ckc = new KubeConfig();
    ckc.loadFromString(cluster.kubeconfig({ token: `${name}-sa` }));
    const cert = await pki.agentCert(name);
    const agent = new Agent({
      agentName: name,
      agentVersion: 'test',
      target: `127.0.0.1:${gateway.agentPort}`,
      serverNameOverride: 'localhost',
      credentials: tunnelCredentials.tls(
        Buffer.from(pki.ca.certPem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.certPem),
      ),
      heartbeatIntervalMs: 5_000,
      keepAlivePingIntervalMs: 0,
      kubeConfig: ckc,
      enableResourceProxy: true,
      resourceProxyFilter: 'none',
      logger,
    });
    agent.start();
    agents.push(agent);
  }
  adopting = await startProxy(true);
  plain = await startProxy(false);
}, 60_000);

afterAll(async () => {
  await adopting?.stop();
  await plain?.stop();
  for (const a of agents) await a.stop();
  await gateway?.stop();
  for (const c of clusters) await c.close();
  await controlPlane?.close();
});

interface Creds {
  cert?: { certPem: string; keyPem: string };
  token?: string;
}
/** GET through the proxy with `creds`, as Argo CD would from a cluster Secret. */
async function get(
  app: ResourceProxyService,
  urlPath: string,
  creds: Creds,
): Promise<{ status: number; body: string }> {
  const dispatcher = new HttpAgent({
    connect: {
      ca: pki.ca.certPem,
      ...(creds.cert ? { cert: creds.cert.certPem, key: creds.cert.keyPem } : {}),
    },
  });
  try {
    const res = await request(`https://127.0.0.1:${app.proxy!.port}${urlPath}`, {
      dispatcher,
      headers: creds.token ? { authorization: `Bearer ${creds.token}` } : {},
    });
    return { status: res.statusCode, body: await res.body.text() };
  } finally {
    await dispatcher.close();
  }
}

/** What a cluster Secret gives Argo CD: its bearer token and client certificate. */
async function clusterCreds(name: string): Promise<Creds> {
  const s = await core.readNamespacedSecret({ name, namespace: 'argocd' });
  const config = JSON.parse(decode(s.data?.config)) as {
    bearerToken?: string;
    tlsClientConfig: { certData?: string; keyData?: string };
  };
  const { certData, keyData } = config.tlsClientConfig;
  return {
    ...(config.bearerToken ? { token: config.bearerToken } : {}),
    ...(certData && keyData ? { cert: { certPem: decode(certData), keyPem: decode(keyData) } } : {}),
  };
}
const namespaces = '/api/v1/namespaces';

describe("argocd-agent's self-registered cluster Secrets (RS512 token + shared certificate)", () => {
  it('reach their agent with --adopt-argocd-agent-clusters, the token checked before the certificate', async () => {
    const creds = await clusterCreds('cluster-agent-b');
    expect(creds.token && creds.cert).toBeTruthy();
    // As Argo CD (client-go) sends it: the server URL's ?agentName= is dropped, the token names the agent.
    const plainPath = await get(adopting, namespaces, creds);
    expect(plainPath.status).toBe(200);
    expect(plainPath.body).toContain('"kind":"NamespaceList"');
    // As a client that keeps the query: it selects the agent too, and is not forwarded.
    expect((await get(adopting, `${namespaces}?agentName=agent-b`, creds)).status).toBe(200);
    expect(clusters[1]!.requests.some((r) => 'agentName' in r.query)).toBe(false);
  });

  it('are refused without the flag: their issuer is not ours', async () => {
    const res = await get(plain, namespaces, await clusterCreds('cluster-agent-b'));
    expect(res.status).toBe(401);
    expect(res.body).toContain('unexpected \\"iss\\" claim value');
  });

  it("select only the agent their token names: agent-b's token with ?agentName=agent-a is refused", async () => {
    const res = await get(adopting, `${namespaces}?agentName=agent-a`, await clusterCreds('cluster-agent-b'));
    expect(res.status).toBe(403);
    expect(res.body).toContain('may not reach agent agent-a');
    expect(
      (
        await get(
          adopting,
          `/clusters/agent-a${namespaces}?agentName=agent-b`,
          await clusterCreds('cluster-agent-b'),
        )
      ).status,
    ).toBe(400);
  });
});

describe('?agentName= as bad input', () => {
  it('refuses two values, a name that is not a DNS label, and survives malformed escapes in the query', async () => {
    const creds = await clusterCreds('cluster-agent-b');
    for (const query of ['?agentName=agent-b&agentName=agent-a', '?agentName=Agent_B', '?agentName=']) {
      const res = await get(adopting, `${namespaces}${query}`, creds);
      expect(res.status).toBe(400);
      expect(res.body).toContain('must name one agent');
    }
    // A malformed escape in another parameter is the cluster's business, not a proxy failure.
    const res = await get(adopting, `${namespaces}?agentName=agent-b&x=%zz`, creds);
    expect(res.status).not.toBe(500);
    // Encoded, the parameter name still selects (and is still removed).
    expect((await get(adopting, `${namespaces}?agent%4Eame=agent-b`, creds)).status).toBe(200);
    expect(
      clusters[1]!.requests.some((r) => Object.keys(r.query).some((k) => k.toLowerCase() === 'agentname')),
    ).toBe(false);
  });
});

describe('agent credentials never work as a caller', () => {
  it("refuses argocd-agentctl's per-agent certificate (no credential kind), with or without the flag", async () => {
    const creds = await clusterCreds('cluster-agent-a');
    expect(creds.token).toBeUndefined();
    for (const app of [adopting, plain]) {
      const res = await get(app, `/clusters/agent-a${namespaces}`, creds);
      expect(res.status).toBe(401);
      expect(res.body).toContain('does not say it is a caller credential');
    }
  });

  it("refuses the agent's own certificates: argocd-agent's (unmarked) and ours (agent kind)", async () => {
    const theirs = await pki.clientCert('agent-a');
    expect((await get(adopting, `/clusters/agent-a${namespaces}`, { cert: theirs })).status).toBe(401);
    const ours = await pki.agentCert('agent-a');
    const res = await get(adopting, `/clusters/agent-a${namespaces}`, { cert: ours });
    expect(res.status).toBe(401);
    expect(res.body).toContain('only caller credentials are accepted here');
  });

  it("refuses argocd-agent's agent access tokens, signed by the same key", async () => {
    const now = Math.floor(Date.now() / 1000);
    const { createPrivateKey, randomUUID } = await import('node:crypto');
    const access = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS512', typ: 'JWT' })
      .setJti(randomUUID())
      .setIssuer('argocd-agent-server')
      .setSubject('agent-a')
      .setAudience(['argocd-agent-server-access'])
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(createPrivateKey(secrets.jwtKeyPem));
    const res = await get(adopting, `/clusters/agent-a${namespaces}`, { token: access });
    expect(res.status).toBe(401);
    expect(res.body).toContain('unexpected \\"aud\\" claim value');
  });

  it('refuses the shared client certificate on its own (no token)', async () => {
    expect(
      (await get(adopting, `/clusters/agent-b${namespaces}`, { cert: secrets.sharedClient })).status,
    ).toBe(401);
  });
});

describe('cluster Secrets adopted by the registrar', () => {
  it('keep their server and reach their agent with the caller token that replaced the certificate', async () => {
    const tokens = await TokenAuthority.fromPem(secrets.jwtKeyPem, { audience: 'resource-proxy' });
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const registrar = new ClusterRegistrar({
      kubeConfig: kc,
      namespace: 'argocd',
      serverFor: (agent) => `https://argocd-agent-resource-proxy:9090/clusters/${agent}`,
      credentialsFor: async (agent) => ({
        bearerToken: await tokens.issue('argocd-server', { agents: [agent], ttlSeconds: 600 }),
      }),
      fingerprint: fingerprint(tokens.keyId),
      logger,
      adoptArgocdAgentSecrets: true,
    });
    expect(await registrar.ensure('agent-a')).toBe('adopted');
    const s = await core.readNamespacedSecret({ name: 'cluster-agent-a', namespace: 'argocd' });
    expect(decode(s.data?.server)).toBe('https://argocd-agent-resource-proxy:9090?agentName=agent-a');
    const creds = await clusterCreds('cluster-agent-a');
    expect(creds.cert).toBeUndefined();
    for (const app of [adopting, plain]) {
      const res = await get(app, namespaces, creds);
      expect(res.status).toBe(200);
    }
    // Scoped to agent-a: it does not reach agent-b.
    expect((await get(adopting, `${namespaces}?agentName=agent-b`, creds)).status).toBe(403);
  });
});
