// The gateway started the way argocd-agent's principal Deployment starts: its params
// ConfigMap (as a file), the env its Deployment derives from it, and TLS material and keys
// in the Secrets argocd-agent reads by name, served by the fake Kubernetes API.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import {
  type AppProcess,
  ARGOCD_AGENT_PRINCIPAL_ENV,
  ARGOCD_AGENT_PRINCIPAL_PARAMS,
  argocdAgentSecrets,
  createTestPki,
  envFromParams,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type NatsServerHandle,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
  type TestPki,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireBuild, silent } from './support.js';

const WARN = 'warn';
const INFO = 'info';

let nats: NatsServerHandle;
let kube: FakeKubeApiServer;
let core: CoreV1Api;
let pki: TestPki;
let gateway: AppProcess;
let agent: Agent | undefined;
let agentPort: number;
let healthPort: number;

beforeAll(async () => {
  requireBuild();
  nats = await startNatsServer();
  kube = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  pki = await createTestPki();
  const secrets = await argocdAgentSecrets(pki);
  for (const s of secrets.manifests)
    await core.createNamespacedSecret({ namespace: 'argocd', body: s as never });

  const dir = makeTempDir('argocd-agent-principal-');
  agentPort = await freePort();
  healthPort = await freePort();
  const data: Record<string, string> = {
    ...ARGOCD_AGENT_PRINCIPAL_PARAMS,
    'principal.listen.port': String(agentPort),
    'principal.metrics.port': '0',
    'principal.healthz.port': String(healthPort),
    // argocd-agent's documented explicit form: `subject:` must not become part of the regex.
    'principal.auth': 'mtls:subject:CN=([^,]+)',
    // A typo, and an argocd-agent feature switched on: both must be reported.
    'principal.lisen.port': '9443',
    'principal.namespace-create.enable': 'true',
  };
  const params = path.join(dir, 'argocd-agent-params.yaml');
  writeFileSync(
    params,
    stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-agent-params' }, data }),
  );
  const kubeconfig = await kube.writeKubeconfig(path.join(dir, 'kubeconfig'));
  gateway = spawnAppProcess('stream-gateway', [], {
    ...envFromParams(ARGOCD_AGENT_PRINCIPAL_ENV, data),
    ARGOCD_PRINCIPAL_PARAMS_FILE: params,
    // Ours: NATS, where proxies reach this gateway, and the API the Secrets come from.
    ARGOCD_PRINCIPAL_NATS_URL: nats.url,
    ARGOCD_PRINCIPAL_NATS_INSECURE: 'true',
    ARGOCD_PRINCIPAL_INTERNAL_LISTEN_PORT: String(await freePort()),
    ARGOCD_PRINCIPAL_ADVERTISE_ADDRESS: '127.0.0.1',
    ARGOCD_PRINCIPAL_KUBECONFIG: kubeconfig,
  });
  await gateway.waitForLine((l) => l.msg === 'stream gateway started');
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await kube?.close();
  await nats?.stop();
});

const serverCertificateSerial = () =>
  new Promise<string>((resolve, reject) => {
    const s = tlsConnect(
      { host: '127.0.0.1', port: agentPort, ca: pki.ca.certPem, servername: 'localhost' },
      () => {
        resolve(s.getPeerCertificate().serialNumber);
        s.destroy();
      },
    );
    s.on('error', reject);
  });

describe("the gateway on argocd-agent's ConfigMap, env and Secrets", () => {
  it('reports the typo with the nearest name, the missing feature by name, and nothing of its siblings', () => {
    const lines = gateway.lines();
    const started = lines.findIndex((l) => l.msg === 'stream gateway started');
    const reports = lines.slice(0, started).filter((l) => typeof l.configName === 'string');
    const by = (name: string) => reports.filter((l) => l.configName === name);
    expect(by('principal.lisen.port')).toEqual([
      expect.objectContaining({ level: WARN, didYouMean: 'principal.listen.port' }),
    ]);
    expect(by('principal.namespace-create.enable')).toEqual([
      expect.objectContaining({ level: WARN, argocdAgentFeature: 'namespace creation on the principal' }),
    ]);
    expect(by('ARGOCD_PRINCIPAL_NAMESPACE_CREATE_ENABLE')).toEqual([
      expect.objectContaining({ level: WARN }),
    ]);
    // Shipped "off" values of features we lack: information, not warnings.
    expect(by('principal.websocket.enable')).toEqual([expect.objectContaining({ level: INFO })]);
    // The resource proxy's and the redis proxy's keys share the ConfigMap and prefix: not reported.
    for (const sibling of [
      'principal.resource-proxy.secret-name',
      'ARGOCD_PRINCIPAL_RESOURCE_PROXY_SECRET_NAME',
      'principal.redis.server.address',
      'ARGOCD_PRINCIPAL_REDIS_SERVER_ADDRESS',
    ]) {
      expect(by(sibling)).toEqual([]);
    }
    // Each name is reported once.
    expect(new Set(reports.map((l) => l.configName)).size).toBe(reports.length);
  });

  it("serves health on argocd-agent's ARGOCD_PRINCIPAL_HEALTH_CHECK_PORT", async () => {
    const res = await fetch(`http://127.0.0.1:${healthPort}/healthz`);
    expect(res.status).toBe(200);
  });

  it('accepts an agent under mtls:subject:CN=(…), with the certificate from argocd-agent-principal-tls', async () => {
    const cert = await pki.agentCert('agent-a');
    agent = new Agent({
      agentName: 'agent-a',
      agentVersion: 'test',
      target: `127.0.0.1:${agentPort}`,
      serverNameOverride: 'localhost',
      credentials: tunnelCredentials.tls(
        Buffer.from(pki.ca.certPem),
        Buffer.from(cert.keyPem),
        Buffer.from(cert.certPem),
      ),
      heartbeatIntervalMs: 1_000,
      keepAlivePingIntervalMs: 0,
      enableResourceProxy: false,
      logger: silent,
      backoffInitialMs: 100,
      backoffMaxMs: 500,
    });
    agent.start();
    await gateway.waitForLine((l) => l.agent === 'agent-a' && /connected/.test(String(l.msg)));
    const deadline = Date.now() + 10_000;
    while (!agent.ready && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50)); // wait-ok: poll interval of a loop that waits for the event under a deadline
    expect(agent.ready).toBe(true);
  });

  it('picks up a rotated argocd-agent-principal-tls for new connections, keeping the live tunnel', async () => {
    const before = await serverCertificateSerial();
    const next = await pki.serverCert(['localhost', '127.0.0.1']);
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await core.replaceNamespacedSecret({
      name: 'argocd-agent-principal-tls',
      namespace: 'argocd',
      body: {
        metadata: { name: 'argocd-agent-principal-tls', namespace: 'argocd' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(next.certPem), 'tls.key': b64(next.keyPem) },
      },
    });
    await gateway.waitForLine((l) => l.msg === 'material reloaded from secret');
    const after = await serverCertificateSerial();
    expect(after).not.toBe(before);
    expect(after.toLowerCase()).toBe(
      new (await import('node:crypto')).X509Certificate(next.certPem).serialNumber.toLowerCase(),
    );
    expect(agent?.ready).toBe(true);
  });
});

describe('reading the key from argocd-agent-jwt (RSA)', () => {
  it('verifies agent tokens signed with the RSA key of the Secret', async () => {
    const dir = makeTempDir('argocd-agent-token-');
    const { TokenAuthority } = await import('@pullplane/auth');
    const rsa = (await argocdAgentSecrets(pki)).jwtKeyPem;
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await core.replaceNamespacedSecret({
      name: 'argocd-agent-jwt',
      namespace: 'argocd',
      body: { metadata: { name: 'argocd-agent-jwt', namespace: 'argocd' }, data: { 'jwt.key': b64(rsa) } },
    });
    const port = await freePort();
    const g = spawnAppProcess('stream-gateway', [
      '--listen-host=127.0.0.1',
      `--listen-port=${port}`,
      `--internal-listen-port=${await freePort()}`,
      '--advertise-address=127.0.0.1',
      '--metrics-port=0',
      '--healthz-port=0',
      '--auth=token',
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      `--kubeconfig=${await kube.writeKubeconfig(path.join(dir, 'kubeconfig'))}`,
    ]);
    try {
      await g.waitForLine((l) => l.msg === 'stream gateway started');
      const issuer = await TokenAuthority.fromPem(rsa, { audience: 'stream-gateway' });
      expect(issuer.algorithm).toBe('RS512');
      const token = await issuer.issue('agent-t');
      const { Metadata } = await import('@grpc/grpc-js');
      const tokenAgent = new Agent({
        agentName: 'agent-t',
        agentVersion: 'test',
        target: `127.0.0.1:${port}`,
        serverNameOverride: 'localhost',
        credentials: tunnelCredentials.tls(Buffer.from(pki.ca.certPem)),
        metadata: () => {
          const m = new Metadata();
          m.set('authorization', `Bearer ${token}`);
          return m;
        },
        heartbeatIntervalMs: 1_000,
        keepAlivePingIntervalMs: 0,
        enableResourceProxy: false,
        logger: silent,
        backoffInitialMs: 100,
        backoffMaxMs: 500,
      });
      tokenAgent.start();
      const deadline = Date.now() + 10_000;
      while (!tokenAgent.ready && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50)); // wait-ok: poll interval of a loop that waits for the event under a deadline
      expect(tokenAgent.ready).toBe(true);
      await tokenAgent.stop();
    } finally {
      await g.stop();
    }
  }, 30_000);
});

describe("adopting argocd-agent's cluster Secrets as agents connect", () => {
  it("rewrites an agent's Secret in place (server kept, caller token instead of the certificate) and registers a new one", async () => {
    const dir = makeTempDir('argocd-agent-adopt-');
    const installed = await argocdAgentSecrets(pki, { ctl: ['agent-c'] });
    const existing = installed.manifests.find((m) => m.metadata.name === 'cluster-agent-c')!;
    await core.createNamespacedSecret({ namespace: 'argocd', body: existing as never });
    const jwt = installed.manifests.find((m) => m.metadata.name === 'argocd-agent-jwt')!;
    await core.replaceNamespacedSecret({ name: 'argocd-agent-jwt', namespace: 'argocd', body: jwt as never });
    const port = await freePort();
    const data: Record<string, string> = {
      ...ARGOCD_AGENT_PRINCIPAL_PARAMS,
      'principal.listen.port': String(port),
      'principal.metrics.port': '0',
      'principal.healthz.port': '0',
      'principal.auth': 'mtls:subject:CN=([^,]+)',
    };
    const g = spawnAppProcess('stream-gateway', [], {
      ...envFromParams(ARGOCD_AGENT_PRINCIPAL_ENV, data),
      ARGOCD_PRINCIPAL_ENABLE_SELF_CLUSTER_REGISTRATION: 'true',
      ARGOCD_PRINCIPAL_RESOURCE_PROXY_ADDRESS: 'argocd-agent-resource-proxy:9090',
      ARGOCD_PRINCIPAL_ADOPT_ARGOCD_AGENT_CLUSTERS: 'true',
      ARGOCD_PRINCIPAL_NATS_URL: nats.url,
      ARGOCD_PRINCIPAL_NATS_INSECURE: 'true',
      ARGOCD_PRINCIPAL_INTERNAL_LISTEN_PORT: String(await freePort()),
      ARGOCD_PRINCIPAL_ADVERTISE_ADDRESS: '127.0.0.1',
      ARGOCD_PRINCIPAL_KUBECONFIG: await kube.writeKubeconfig(path.join(dir, 'kubeconfig')),
    });
    const started: Agent[] = [];
    try {
      await g.waitForLine((l) => l.msg === 'stream gateway started');
      for (const name of ['agent-c', 'agent-d']) {
        const cert = await pki.agentCert(name);
        const a = new Agent({
          agentName: name,
          agentVersion: 'test',
          target: `127.0.0.1:${port}`,
          serverNameOverride: 'localhost',
          credentials: tunnelCredentials.tls(
            Buffer.from(pki.ca.certPem),
            Buffer.from(cert.keyPem),
            Buffer.from(cert.certPem),
          ),
          heartbeatIntervalMs: 1_000,
          keepAlivePingIntervalMs: 0,
          enableResourceProxy: false,
          logger: silent,
        });
        a.start();
        started.push(a);
      }
      await g.waitForLine(
        (l) => l.agent === 'agent-c' && String(l.msg).startsWith("adopted argocd-agent's cluster secret"),
      );
      await g.waitForLine((l) => l.agent === 'agent-d' && l.msg === 'registered agent as an Argo CD cluster');
      const decode = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
      const adopted = await core.readNamespacedSecret({ name: 'cluster-agent-c', namespace: 'argocd' });
      expect(decode(adopted.data?.server)).toBe('https://argocd-agent-resource-proxy:9090?agentName=agent-c');
      expect(adopted.metadata?.labels).toMatchObject({
        'argocd-agent.argoproj-labs.io/agent-name': 'agent-c',
        'app.kubernetes.io/managed-by': 'pullplane',
      });
      const config = JSON.parse(decode(adopted.data?.config)) as {
        bearerToken: string;
        tlsClientConfig: Record<string, unknown>;
      };
      expect(config.tlsClientConfig.certData).toBeUndefined();
      // Signed with argocd-agent's RSA key from argocd-agent-jwt, as our caller token for agent-c only.
      const { TokenAuthority } = await import('@pullplane/auth');
      const verifier = await TokenAuthority.fromPem(installed.jwtKeyPem, { audience: 'resource-proxy' });
      expect(await verifier.verify(config.bearerToken)).toMatchObject({ agents: ['agent-c'] });
      const created = await core.readNamespacedSecret({ name: 'cluster-agent-d', namespace: 'argocd' });
      expect(decode(created.data?.server)).toBe('https://argocd-agent-resource-proxy:9090/clusters/agent-d');
    } finally {
      for (const a of started) await a.stop();
      await g.stop();
    }
  }, 40_000);
});

describe("argocd-agent's Istio setup (env only)", () => {
  it('reads ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT and leaves two actionable problems: how proxies authenticate, and the NATS identity argocd-agent never had', async () => {
    const { ConfigError, loadConfig } = await import('@pullplane/config');
    const { gatewayOptions } = await import('../src/options.js');
    const { validateGatewayConfig } = await import('@pullplane/gateway');
    const data = {
      ...ARGOCD_AGENT_PRINCIPAL_PARAMS,
      'principal.tls.insecure-plaintext': 'true',
      'principal.auth': 'header:x-forwarded-client-cert:^.*URI=spiffe://[^/]+/ns/[^/]+/sa/([^,;]+)',
    };
    const load = (extra: Record<string, string>) =>
      loadConfig(gatewayOptions, {
        argv: [],
        env: { ...envFromParams(ARGOCD_AGENT_PRINCIPAL_ENV, data), ...extra },
        validate: (c) => validateGatewayConfig(c, {}),
      });
    let problems: string[] = [];
    try {
      load({});
    } catch (err) {
      problems = (err as InstanceType<typeof ConfigError>).problems.map((p) => p.message);
    }
    expect(problems).toEqual([
      expect.stringContaining('--insecure-plaintext with --internal-auth=mtls'),
      expect.stringMatching(/NATS holds agent presence and revocations.*--nats-nkey-seed-path/),
    ]);
    // With the internal listener behind the mesh too (what deploy/istio sets), and a NATS
    // identity (or, here, none on purpose), it starts.
    const { config, sources } = load({
      ARGOCD_PRINCIPAL_NATS_INSECURE: 'true',
      ARGOCD_PRINCIPAL_INTERNAL_AUTH: 'istio',
      ARGOCD_PRINCIPAL_MESH_TRUST_DOMAIN: 'cluster.local',
      ARGOCD_PRINCIPAL_INTERNAL_MESH_NAMESPACES: 'argocd',
      ARGOCD_PRINCIPAL_INTERNAL_ALLOWED_CLIENTS: 'argocd-agent-resource-proxy',
    });
    expect(config.insecurePlaintext).toBe(true);
    expect(sources.insecurePlaintext).toEqual({ kind: 'env', name: 'ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT' });
  });
});
