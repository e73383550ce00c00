// The redis proxy on argocd-agent's ConfigMap and env with principal.redis.tls.enabled: TLS
// towards argocd-redis (CA from argocd-redis-tls) and on its own listener (certificate from
// argocd-redis-proxy-tls), both Secrets read by name from the Kubernetes API and watched. And
// --tls-client-ca-path: only caller certificates get in, never an agent's or a proxy's.
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  type AppProcess,
  ARGOCD_AGENT_PRINCIPAL_ENV,
  ARGOCD_AGENT_PRINCIPAL_PARAMS,
  createTestPki,
  envFromParams,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type NatsServerHandle,
  type RedisServerHandle,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
  startRedisServer,
  type TestPki,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const PASSWORD = 'argocd-redis-pw';

let dir: string;
let pki: TestPki;
let nats: NatsServerHandle;
let argocdRedis: RedisServerHandle;
let kube: FakeKubeApiServer;
let core: CoreV1Api;

beforeAll(async () => {
  dir = makeTempDir('redis-proxy-argocd-agent-');
  pki = await createTestPki();
  nats = await startNatsServer();
  const redisCert = await pki.serverCert(['localhost', '127.0.0.1']);
  argocdRedis = await startRedisServer({
    password: PASSWORD,
    tls: { cert: redisCert.certPem, key: redisCert.keyPem, ca: pki.ca.certPem },
  });
  kube = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  const listener = await pki.serverCert(['localhost', '127.0.0.1']);
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: {
      metadata: { name: 'argocd-redis-proxy-tls' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(listener.certPem), 'tls.key': b64(listener.keyPem) },
    },
  });
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: { metadata: { name: 'argocd-redis-tls' }, data: { 'ca.crt': b64(pki.ca.certPem) } },
  });
}, 60_000);

afterAll(async () => {
  await kube?.close();
  await argocdRedis?.stop();
  await nats?.stop();
});

const serialOf = (pem: string) => new X509Certificate(pem).serialNumber;

describe('principal.redis.tls.enabled, as argocd-agent: TLS both ways, material from Secrets', () => {
  let proxy: AppProcess;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    const data: Record<string, string> = {
      ...ARGOCD_AGENT_PRINCIPAL_PARAMS,
      'principal.redis.tls.enabled': 'true',
      'principal.redis.server.address': `127.0.0.1:${argocdRedis.port}`,
      // No mounted files: the certificate and CA come from their Secrets.
      'principal.redis.proxy.server.tls.cert-path': '',
      'principal.redis.proxy.server.tls.key-path': '',
      'principal.redis.ca-path': '',
      // A typo the operator must hear about.
      'principal.redis.tls.enabeld': 'true',
    };
    const params = path.join(dir, 'params.yaml');
    writeFileSync(
      params,
      stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-agent-params' }, data }),
    );
    proxy = spawnAppProcess(
      'redis-proxy',
      [
        '--listen-host=127.0.0.1',
        `--listen-port=${port}`,
        '--metrics-port=0',
        '--healthz-port=0',
        '--gateway-plaintext',
      ],
      {
        ...envFromParams(ARGOCD_AGENT_PRINCIPAL_ENV, data),
        REDIS_PASSWORD: PASSWORD,
        ARGOCD_PRINCIPAL_PARAMS_FILE: params,
        ARGOCD_PRINCIPAL_NATS_URL: nats.url,
        ARGOCD_PRINCIPAL_NATS_INSECURE: 'true',
        ARGOCD_PRINCIPAL_KUBECONFIG: await kube.writeKubeconfig(path.join(dir, 'kubeconfig')),
      },
    );
    await proxy.waitForLine((l) => l.msg === 'redis proxy listening');
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
  });

  it('serves TLS on its listener and reaches argocd-redis over TLS', async () => {
    const client = new Redis({
      host: '127.0.0.1',
      port,
      password: PASSWORD,
      tls: { ca: pki.ca.certPem, servername: 'localhost' },
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    });
    await client.connect();
    expect(await client.set('app|settings', 'v1')).toBe('OK');
    expect(await client.get('app|settings')).toBe('v1');
    client.disconnect();
    const line = await proxy.waitForLine((l) => l.msg === 'redis proxy listening');
    expect(line.tls).toBe(true);
  });

  it('refuses plaintext clients on the listener', async () => {
    const client = new Redis({
      host: '127.0.0.1',
      port,
      password: PASSWORD,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    await expect(client.connect().then(() => client.ping())).rejects.toThrow();
    client.disconnect();
  });

  it('reports the misspelt key with the nearest name, not the keys of its sibling services', () => {
    const lines = proxy.lines();
    const listening = lines.findIndex((l) => l.msg === 'redis proxy listening');
    const reports = lines.slice(0, listening).filter((l) => typeof l.configName === 'string');
    expect(reports.filter((l) => l.configName === 'principal.redis.tls.enabeld')).toEqual([
      expect.objectContaining({ level: 'warn', didYouMean: 'principal.redis.tls.enabled' }),
    ]);
    expect(
      reports.filter(
        (l) =>
          String(l.configName).includes('RESOURCE_PROXY') ||
          String(l.configName).startsWith('principal.resource-proxy.'),
      ),
    ).toEqual([]);
    expect(
      reports.filter(
        (l) => l.configName === 'principal.listen.port' || l.configName === 'ARGOCD_PRINCIPAL_AUTH',
      ),
    ).toEqual([]);
  });

  it('picks up a rotated argocd-redis-proxy-tls for new connections', async () => {
    const next = await pki.serverCert(['localhost', '127.0.0.1']);
    await core.replaceNamespacedSecret({
      name: 'argocd-redis-proxy-tls',
      namespace: 'argocd',
      body: {
        metadata: { name: 'argocd-redis-proxy-tls', namespace: 'argocd' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(next.certPem), 'tls.key': b64(next.keyPem) },
      },
    });
    await proxy.waitForLine((l) => l.msg === 'redis proxy TLS material reloaded');
    const serial = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port, ca: pki.ca.certPem, servername: 'localhost' }, () => {
        resolve(s.getPeerCertificate().serialNumber);
        s.destroy();
      });
      s.on('error', reject);
    });
    expect(serial.toLowerCase()).toBe(serialOf(next.certPem).toLowerCase());
  });
});

describe('--tls-client-ca-path admits caller certificates only', () => {
  let proxy: AppProcess;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    const server = await pki.serverCert(['localhost', '127.0.0.1']);
    const write = (name: string, body: string) => {
      const p = path.join(dir, name);
      writeFileSync(p, body);
      return p;
    };
    proxy = spawnAppProcess('redis-proxy', [
      '--listen-host=127.0.0.1',
      `--listen-port=${port}`,
      '--metrics-port=0',
      '--healthz-port=0',
      '--gateway-plaintext',
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      `--redis-server-address=127.0.0.1:${argocdRedis.port}`,
      '--redis-tls',
      `--redis-ca-path=${write('ca.crt', pki.ca.certPem)}`,
      `--redis-password=${PASSWORD}`,
      `--tls-cert-path=${write('listener.crt', server.certPem)}`,
      `--tls-key-path=${write('listener.key', server.keyPem)}`,
      `--tls-client-ca-path=${path.join(dir, 'ca.crt')}`,
    ]);
    await proxy.waitForLine((l) => l.msg === 'redis proxy listening');
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
  });

  /** AUTH and PING over TLS with a client certificate: what comes back before the connection ends. */
  const attempt = (cert?: { certPem: string; keyPem: string }) =>
    new Promise<string>((resolve) => {
      let out = '';
      const s = tlsConnect(
        {
          host: '127.0.0.1',
          port,
          ca: pki.ca.certPem,
          servername: 'localhost',
          ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        },
        () => s.write(`*2\r\n$4\r\nAUTH\r\n$${PASSWORD.length}\r\n${PASSWORD}\r\n*1\r\n$4\r\nPING\r\n`),
      );
      s.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('+PONG')) s.end();
      });
      s.on('error', (e) => {
        out += `error: ${e.message}`;
      });
      s.on('close', () => resolve(out));
    });

  it('serves a caller certificate', async () => {
    expect(await attempt(await pki.callerCert('argocd-server'))).toContain('+PONG');
  });

  it("refuses an agent's, a proxy's and an unmarked certificate of the same CA, and no certificate", async () => {
    for (const cert of [
      await pki.agentCert('agent-a'),
      await pki.proxyCert('resource-proxy'),
      await pki.clientCert('argocd-server'),
    ]) {
      expect(await attempt(cert)).not.toContain('+PONG');
    }
    expect(await attempt()).not.toContain('+PONG');
    // A last agent certificate: its refusal line, once logged, proves the certificate-less attempt
    // before it logged no certificate refusal (the lines come in order, after the TLS handshakes).
    expect(await attempt(await pki.agentCert('agent-a'))).not.toContain('+PONG');
    const refusals = () => proxy.lines().filter((l) => l.msg === 'redis proxy refused a client certificate');
    await proxy.waitForLine(() => refusals().length >= 4);
    expect(refusals().map((l) => String(l.reason))).toEqual([
      expect.stringContaining('is an agent credential; only caller credentials are accepted here'),
      expect.stringContaining('is a proxy credential; only caller credentials are accepted here'),
      expect.stringContaining('does not say it is a caller credential'),
      expect.stringContaining('is an agent credential; only caller credentials are accepted here'),
    ]);
  });
});
