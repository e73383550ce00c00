import { KubeConfig } from '@kubernetes/client-node';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRegistrar, type ClusterRegistrarOptions, fingerprint, secretName } from '../src/index.js';

let api: FakeKubeApiServer;
let kc: KubeConfig;
beforeAll(async () => {
  api = await startFakeKubeApiServer();
  api.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  kc = new KubeConfig();
  kc.loadFromString(api.kubeconfig());
});
afterAll(() => api.close());

let issued = 0;
function registrar(over: Partial<ClusterRegistrarOptions> = {}): ClusterRegistrar {
  return new ClusterRegistrar({
    kubeConfig: kc,
    namespace: 'argocd',
    serverFor: (agent) => `https://argocd-agent-resource-proxy.argocd.svc:9090/clusters/${agent}`,
    caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    credentialsFor: async (agent) => ({ bearerToken: `token-${agent}-${++issued}` }),
    fingerprint: fingerprint('key-1', 'ca-1'),
    logger: pino({ level: 'silent' }),
    ...over,
  });
}

const secret = (agent: string) =>
  api.store.get({ apiVersion: 'v1', kind: 'Secret', namespace: 'argocd', name: secretName(agent) }) as
    | {
        metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
        data: Record<string, string>;
      }
    | undefined;
const decode = (s: string) => Buffer.from(s, 'base64').toString();

describe('ClusterRegistrar', () => {
  it('creates an Argo CD cluster secret pointing at the resource proxy', async () => {
    expect(await registrar().ensure('east')).toBe('created');
    const s = secret('east')!;
    expect(s.metadata.labels).toMatchObject({
      'argocd.argoproj.io/secret-type': 'cluster',
      'pullplane.io/agent-name': 'east',
      'app.kubernetes.io/managed-by': 'pullplane',
    });
    expect(decode(s.data.name!)).toBe('east');
    expect(decode(s.data.server!)).toBe('https://argocd-agent-resource-proxy.argocd.svc:9090/clusters/east');
    const config = JSON.parse(decode(s.data.config!)) as {
      bearerToken: string;
      tlsClientConfig: { caData: string; insecure: boolean };
    };
    expect(config.bearerToken).toMatch(/^token-east-/);
    expect(decode(config.tlsClientConfig.caData)).toContain('BEGIN CERTIFICATE');
    expect(config.tlsClientConfig.insecure).toBe(false);
  });

  it('leaves a current secret alone and refreshes it when credentials rotate', async () => {
    const before = secret('east')!.data.config;
    expect(await registrar().ensure('east')).toBe('unchanged');
    expect(secret('east')!.data.config).toBe(before);
    expect(await registrar({ fingerprint: fingerprint('key-2', 'ca-1') }).ensure('east')).toBe('updated');
    expect(secret('east')!.data.config).not.toBe(before);
    expect(secret('east')!.metadata.annotations?.['pullplane.io/credential-fingerprint']).toBe(
      fingerprint('key-2', 'ca-1'),
    );
  });

  it('rewrites a secret before its credentials expire, and not before it must', async () => {
    let now = Date.parse('2026-11-23T00:00:00Z');
    const ttlMs = 24 * 3600_000;
    const expiring = () =>
      registrar({
        credentialsFor: async (agent) => ({
          bearerToken: `token-${agent}-${++issued}`,
          expiresAt: new Date(now + ttlMs),
        }),
        refreshBeforeMs: ttlMs / 3,
        now: () => new Date(now),
      });
    // A secret written before credentials expired carries no expiry: renewed at once.
    expect(await registrar().ensure('exp')).toBe('created');
    expect(await expiring().ensure('exp')).toBe('updated');
    const token = () =>
      (JSON.parse(decode(secret('exp')!.data.config!)) as { bearerToken: string }).bearerToken;
    const first = token();
    expect(secret('exp')!.metadata.annotations?.['pullplane.io/credential-expires-at']).toBe(
      '2026-11-24T00:00:00.000Z',
    );
    now += ttlMs / 2;
    expect(await expiring().ensure('exp')).toBe('unchanged');
    expect(token()).toBe(first);
    now += ttlMs / 6 + 1;
    expect(await expiring().ensure('exp')).toBe('updated');
    expect(token()).not.toBe(first);
    expect(Date.parse(secret('exp')!.metadata.annotations!['pullplane.io/credential-expires-at']!)).toBe(
      now + ttlMs,
    );
    // A registrar for credentials that never expire never rewrites for that reason.
    expect(await registrar().ensure('exp')).toBe('unchanged');
  });

  it('sweeps without asking the API about Secrets it knows are current', async () => {
    let now = Date.parse('2026-11-23T00:00:00Z');
    const ttlMs = 24 * 3600_000;
    const r = registrar({
      credentialsFor: async (agent) => ({
        bearerToken: `token-${agent}-${++issued}`,
        expiresAt: new Date(now + ttlMs),
      }),
      refreshBeforeMs: ttlMs / 3,
      now: () => new Date(now),
    });
    expect(await r.ensure('sweep')).toBe('created');
    api.clearRequests();
    now += ttlMs / 2;
    expect(await r.refresh('sweep')).toBe('unchanged');
    expect(api.requests).toEqual([]);
    now += ttlMs / 6 + 1;
    expect(await r.refresh('sweep')).toBe('updated');
    expect(api.requests.map((q) => q.method)).toEqual(['GET', 'PUT']);
  });

  it('writes client certificates into tlsClientConfig when asked to', async () => {
    const r = registrar({ credentialsFor: async () => ({ certData: 'CERT', keyData: 'KEY' }) });
    expect(await r.ensure('north')).toBe('created');
    const config = JSON.parse(decode(secret('north')!.data.config!)) as {
      tlsClientConfig: Record<string, string>;
    };
    expect(decode(config.tlsClientConfig.certData!)).toBe('CERT');
    expect(decode(config.tlsClientConfig.keyData!)).toBe('KEY');
  });

  it('never overwrites or deletes a secret it did not create', async () => {
    api.store.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'cluster-west',
        namespace: 'argocd',
        labels: { 'argocd.argoproj.io/secret-type': 'cluster' },
      },
      data: { server: Buffer.from('https://real-cluster').toString('base64') },
    });
    expect(await registrar().ensure('west')).toBe('foreign');
    expect(await registrar().remove('west')).toBe('foreign');
    expect(decode(secret('west')!.data.server!)).toBe('https://real-cluster');
  });

  it('yields exactly one secret when many replicas register the same agent at once', async () => {
    const replicas = Array.from({ length: 8 }, () => registrar());
    const results = await Promise.all(replicas.map((r) => r.ensure('south')));
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(results.every((r) => r === 'created' || r === 'unchanged')).toBe(true);
    const all = api.store
      .list({ apiVersion: 'v1', kind: 'Secret', namespace: 'argocd' })
      .filter((s) => s.metadata.name === 'cluster-south');
    expect(all).toHaveLength(1);
  });

  it('removes its own secret', async () => {
    expect(await registrar().remove('south')).toBe('deleted');
    expect(secret('south')).toBeUndefined();
    expect(await registrar().remove('south')).toBe('absent');
  });

  it('refuses agent names that are not DNS labels', async () => {
    await expect(registrar().ensure('../kube-system')).rejects.toThrow(/not an agent name/);
  });
});
