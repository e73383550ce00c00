import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { createTestPki, type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeClient } from '../src/index.js';

// The agent's client for its cluster: credentials prepared once (not read from disk per
// request) and prepared again on rotation, against a real TLS API stand-in that names the
// client certificate each request came with.
let dir: string;
let cluster: FakeKubeApiServer;
let pki: Awaited<ReturnType<typeof createTestPki>>;
const files = { ca: '', cert: '', key: '' };

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'kube-client-'));
  pki = await createTestPki();
  const server = await pki.serverCert(['127.0.0.1']);
  cluster = await startFakeKubeApiServer({
    host: '127.0.0.1',
    tls: { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem, clientCa: pki.ca.certPem },
    token: 'not-used-by-these-clients',
  });
  files.ca = path.join(dir, 'ca.crt');
  files.cert = path.join(dir, 'tls.crt');
  files.key = path.join(dir, 'tls.key');
  writeFileSync(files.ca, pki.ca.certPem);
  await writeClientCert('agent-sa-one');
});
afterAll(async () => {
  await cluster?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function writeClientCert(cn: string) {
  const c = await pki.clientCert(cn);
  writeFileSync(files.cert, c.certPem);
  writeFileSync(files.key, c.keyPem);
}

/** A kubeconfig for the stand-in (its CA by file) with `user`'s credentials. */
function kubeConfigFor(user: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cluster.url, 'certificate-authority': files.ca } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return kc;
}

/** A kubeconfig naming its CA, certificate and key by file, as a mounted Secret would. */
function kubeConfigWithFiles(user: Record<string, unknown> = {}): KubeConfig {
  return kubeConfigFor({ 'client-certificate': files.cert, 'client-key': files.key, ...user });
}

/** The path every proxied request takes (kept-alive connections of its own). */
async function get(kube: KubeClient, p: string): Promise<{ status: number; body: string }> {
  const res = await kube.fetch({ method: 'GET', path: p, headers: { accept: 'application/json' } });
  return { status: res.status, body: res.body.toString() };
}

/** The path upgrades take (exec, attach, port-forward): node:http with its own agent. */
function getByUpgradePath(kube: KubeClient, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    kube
      .request(
        { method: 'GET', path: p, headers: { accept: 'application/json' } },
        (res: IncomingMessage) => {
          text(res).then((body) => resolve({ status: res.statusCode ?? 0, body }), reject);
        },
      )
      .then((r) => {
        r.on('error', reject);
        r.end();
      }, reject);
  });
}

const lastUser = () => cluster.requests.at(-1)?.user;

describe('KubeClient', () => {
  it('reaches an API server whose URL is an IPv6 literal (in-cluster on an IPv6 service network)', async () => {
    const cert = await pki.serverCert(['::1']);
    const v6 = await startFakeKubeApiServer({
      host: '::1',
      tls: { cert: cert.certPem, key: cert.keyPem, ca: pki.ca.certPem, clientCa: pki.ca.certPem },
      token: 'not-used-by-these-clients',
    });
    const kc = new KubeConfig();
    kc.loadFromString(
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: `https://[::1]:${v6.port}`, 'certificate-authority': files.ca } },
        ],
        users: [{ name: 'u', user: { 'client-certificate': files.cert, 'client-key': files.key } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const kube = new KubeClient(kc, { refreshMs: 0 });
    try {
      expect((await get(kube, '/api/v1/namespaces')).status).toBe(200);
      expect(v6.requests.at(-1)?.path).toBe('/api/v1/namespaces');
      expect(v6.requests.at(-1)?.user).toBe('agent-sa-one');
    } finally {
      kube.close();
      await v6.close();
    }
  });

  it('prepares its credentials once, not per request (the files are not read again)', async () => {
    const kube = new KubeClient(kubeConfigWithFiles(), { refreshMs: 0 });
    try {
      for (let i = 0; i < 5; i++) {
        expect((await get(kube, '/api/v1/namespaces')).status).toBe(200);
        expect(lastUser()).toBe('agent-sa-one');
      }
      expect(kube.preparations).toBe(1);
      // The files go away: requests go on with what was prepared.
      rmSync(files.cert);
      rmSync(files.key);
      expect((await get(kube, '/api/v1/namespaces')).status).toBe(200);
      expect(kube.preparations).toBe(1);
    } finally {
      await writeClientCert('agent-sa-one');
      kube.close();
    }
  });

  it.each([
    ['requests', get],
    ['upgrades', getByUpgradePath],
  ])('%s use a rotated client certificate once it prepares again, on new connections', async (_, send) => {
    const kube = new KubeClient(kubeConfigWithFiles(), { refreshMs: 0 });
    try {
      expect((await send(kube, '/api')).status).toBe(200);
      expect(lastUser()).toBe('agent-sa-one');
      await writeClientCert('agent-sa-two');
      expect((await send(kube, '/api')).status).toBe(200);
      expect(lastUser()).toBe('agent-sa-one');
      await kube.refresh();
      expect((await send(kube, '/api')).status).toBe(200);
      expect(lastUser()).toBe('agent-sa-two');
      expect(kube.preparations).toBe(2);
    } finally {
      await writeClientCert('agent-sa-one');
      kube.close();
    }
  });

  it('serves requests again after close, preparing anew (an agent restarted in the same process)', async () => {
    const kube = new KubeClient(kubeConfigWithFiles(), { refreshMs: 0 });
    try {
      expect((await get(kube, '/api')).status).toBe(200);
      kube.close();
      expect((await get(kube, '/api')).status).toBe(200);
      expect((await getByUpgradePath(kube, '/api')).status).toBe(200);
      expect(kube.preparations).toBe(2);
    } finally {
      kube.close();
    }
  });

  it('sends a kubeconfig user and password as basic auth on requests', async () => {
    const kube = new KubeClient(kubeConfigFor({ username: 'admin', password: 's3cret' }), { refreshMs: 0 });
    try {
      await get(kube, '/api');
      expect(cluster.requests.at(-1)?.headers.authorization).toBe(
        `Basic ${Buffer.from('admin:s3cret').toString('base64')}`,
      );
    } finally {
      kube.close();
    }
  });

  it('keeps the previous credentials when preparing again fails', async () => {
    const errors: unknown[] = [];
    const kube = new KubeClient(kubeConfigWithFiles(), {
      refreshMs: 0,
      onRefreshError: (e) => errors.push(e),
    });
    try {
      expect((await get(kube, '/api')).status).toBe(200);
      rmSync(files.cert);
      await expect(kube.refresh()).rejects.toThrow(/ENOENT/);
      expect((await get(kube, '/api')).status).toBe(200);
      expect(lastUser()).toBe('agent-sa-one');
    } finally {
      await writeClientCert('agent-sa-one');
      kube.close();
    }
  });

  it('prepares the credentials again after the API server answers 401', async () => {
    const kube = new KubeClient(kubeConfigFor({ token: 'a-token-the-cluster-does-not-know' }), {
      refreshMs: 0,
    });
    try {
      expect((await get(kube, '/api')).status).toBe(401);
      await expect.poll(() => kube.preparations).toBe(2);
      expect((await get(kube, '/api')).status).toBe(401);
      await expect.poll(() => kube.preparations).toBe(3);
    } finally {
      kube.close();
    }
  });
});
