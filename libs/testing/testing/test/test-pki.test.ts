import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestPki,
  type FakeKubeApiServer,
  makeTempDir,
  runKubectl,
  startFakeKubeApiServer,
  type TestPki,
} from '../src/index.js';

let pki: TestPki;
let server: FakeKubeApiServer;

beforeAll(async () => {
  pki = await createTestPki();
  const serverCert = await pki.serverCert();
  server = await startFakeKubeApiServer({
    tls: { cert: serverCert.certPem, key: serverCert.keyPem, ca: pki.ca.certPem, clientCa: pki.ca.certPem },
  });
});
afterAll(async () => {
  await server?.close();
});

function agentFor(cert?: { certPem: string; keyPem: string }) {
  return new Agent({ connect: { ca: pki.ca.certPem, cert: cert?.certPem, key: cert?.keyPem } });
}

describe('createTestPki', () => {
  it('issues server, client, expired and foreign certificates', async () => {
    const client = await pki.clientCert('agent-a', { uris: ['spiffe://cluster.local/ns/argocd/sa/agent-a'] });
    const x = new X509Certificate(client.certPem);
    expect(x.subject).toContain('CN=agent-a');
    expect(x.subjectAltName).toContain('URI:spiffe://cluster.local/ns/argocd/sa/agent-a');
    expect(x.verify(new X509Certificate(pki.ca.certPem).publicKey)).toBe(true);

    const expired = new X509Certificate((await pki.expiredClientCert('old')).certPem);
    expect(Date.parse(expired.validTo)).toBeLessThan(Date.now());

    const foreign = await pki.foreignCa();
    expect(
      new X509Certificate(foreign.client.certPem).verify(new X509Certificate(pki.ca.certPem).publicKey),
    ).toBe(false);
    expect(
      new X509Certificate(foreign.client.certPem).verify(new X509Certificate(foreign.ca.certPem).publicKey),
    ).toBe(true);

    const server = new X509Certificate((await pki.serverCert(['proxy.local', '10.0.0.1'])).certPem);
    expect(server.subjectAltName).toContain('DNS:proxy.local');
    expect(server.subjectAltName).toContain('IP Address:10.0.0.1');
  });

  it('writes PEM files for tools', async () => {
    const files = await pki.writeToDir(makeTempDir('pki-files-'), { agent: await pki.clientCert('agent-b') });
    expect(await readFile(files.caCert, 'utf8')).toBe(pki.ca.certPem);
    expect(await readFile(files.files.agent!.cert, 'utf8')).toContain('BEGIN CERTIFICATE');
  });
});

describe('fake API server over mutual TLS', () => {
  it('authenticates client certificates from the trusted CA only', async () => {
    const good = await pki.clientCert('agent-a');
    const ok = await undiciFetch(`${server.url}/api/v1/namespaces`, { dispatcher: agentFor(good) });
    expect(ok.status).toBe(200);
    expect(server.requests.at(-1)?.user).toBe('agent-a');

    const anonymous = await undiciFetch(`${server.url}/api/v1/namespaces`, { dispatcher: agentFor() });
    expect(anonymous.status).toBe(401);
    const foreign = await pki.foreignCa();
    const refused = await undiciFetch(`${server.url}/api/v1/namespaces`, {
      dispatcher: agentFor(foreign.client),
    });
    expect(refused.status).toBe(401);
    const expired = await undiciFetch(`${server.url}/api/v1/namespaces`, {
      dispatcher: agentFor(await pki.expiredClientCert('old')),
    });
    expect(expired.status).toBe(401);
  });

  it('works with kubectl and client-node using a client-certificate kubeconfig', async () => {
    const cert = await pki.clientCert('kubectl-user');
    const kubeconfig = await server.writeKubeconfig(join(makeTempDir('tls-kc-'), 'config'), {
      clientCert: cert.certPem,
      clientKey: cert.keyPem,
    });
    const r = await runKubectl(['get', 'ns'], { kubeconfig });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/kube-system\s+Active/);

    const kc = new KubeConfig();
    kc.loadFromString(server.kubeconfig({ clientCert: cert.certPem, clientKey: cert.keyPem }));
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(list.items.map((n) => n.metadata?.name)).toContain('default');
    expect(server.requests.at(-1)?.user).toBe('kubectl-user');
  });
});
