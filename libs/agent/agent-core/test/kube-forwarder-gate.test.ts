import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { NOT_MANAGED_MESSAGE, TRACKING_ID_ANNOTATION } from '@pullplane/managed-filter';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import { type Multiplexer, memoryTunnel } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeForwarder, type KubeForwarder } from '../src/index.js';

// The agent side driven directly: Open frames crafted by the test reach the forwarder over a
// real multiplexer pair, with no resource proxy in front to have cleaned them first. Behind
// it the fake cluster API, which records every request exactly as it arrived.
const AGENT_TOKEN = 'agent-service-account-token';
let cluster: FakeKubeApiServer;
const forwarders: KubeForwarder[] = [];

/** The requesting end of a tunnel whose agent end is a kube forwarder. */
async function tunnelTo(opts: {
  filter: 'managed' | 'none';
  allowImpersonation?: boolean;
}): Promise<Multiplexer> {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: cluster.url, skipTLSVerify: true },
    { name: 'u', token: AGENT_TOKEN },
  );
  const forwarder = createKubeForwarder({ kubeConfig: kc, logger: pino({ level: 'silent' }), ...opts });
  await forwarder.start();
  forwarders.push(forwarder);
  return memoryTunnel((s) => forwarder.handle(s)).requester;
}

async function call(
  tunnel: Multiplexer,
  method: string,
  path: string,
  headers: Array<{ name: string; value: string }> = [],
): Promise<{ status: number; body: string }> {
  const s = tunnel.open({ head: { case: 'http', value: { method, path, headers } } });
  s.end();
  const head = await s.responseHead();
  return { status: head.status, body: await text(s) };
}

/** Writes to the cluster as its admin would (not through the agent). */
async function create(path: string, obj: Record<string, unknown>): Promise<{ metadata: { uid: string } }> {
  const res = await fetch(`${cluster.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(obj),
  });
  expect(res.status, `create ${path}`).toBe(201);
  return (await res.json()) as { metadata: { uid: string } };
}

const ownedBy = (kind: string, apiVersion: string, name: string, uid: string) => [
  { apiVersion, kind, name, uid, controller: true },
];
const podSpec = { containers: [{ name: 'main', image: 'busybox:1.36' }] };

beforeAll(async () => {
  cluster = await startFakeKubeApiServer({ host: '127.0.0.1', token: AGENT_TOKEN });
  const deploy = await create('/apis/apps/v1/namespaces/default/deployments', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'guestbook',
      annotations: { [TRACKING_ID_ANNOTATION]: 'guestbook:apps/Deployment:default/guestbook' },
    },
    spec: {
      selector: { matchLabels: { app: 'guestbook' } },
      template: { metadata: { labels: { app: 'guestbook' } }, spec: podSpec },
    },
  });
  const rs = await create('/apis/apps/v1/namespaces/default/replicasets', {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: 'guestbook-abc',
      ownerReferences: ownedBy('Deployment', 'apps/v1', 'guestbook', deploy.metadata.uid),
    },
    spec: {
      selector: { matchLabels: { app: 'guestbook' } },
      template: { metadata: { labels: { app: 'guestbook' } }, spec: podSpec },
    },
  });
  await create('/api/v1/namespaces/default/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'guestbook-abc-1',
      ownerReferences: ownedBy('ReplicaSet', 'apps/v1', 'guestbook-abc', rs.metadata.uid),
    },
    spec: podSpec,
  });
  await create('/api/v1/namespaces/default/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'stray' },
    spec: podSpec,
  });
  await create('/api/v1/namespaces/default/configmaps', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'plain' },
    data: { secret: 'not for argo' },
  });
});
afterAll(async () => {
  for (const f of forwarders) f.stop();
  await cluster?.close();
});

/** Everything a caller might try to pass as someone else, as a resource proxy that forgot to strip would send it. */
const SMUGGLED = [
  { name: 'Authorization', value: 'Bearer the-callers-own-token' },
  { name: 'Impersonate-User', value: 'system:admin' },
  { name: 'Impersonate-Group', value: 'system:masters' },
  { name: 'Impersonate-Uid', value: '0' },
  { name: 'Impersonate-Extra-Scopes', value: 'everything' },
  { name: 'X-Remote-User', value: 'admin' },
  { name: 'X-Remote-Group', value: 'system:masters' },
  { name: 'X-Remote-Extra-Scopes', value: 'everything' },
  { name: 'Cookie', value: 'session=abc' },
  { name: 'Proxy-Authorization', value: 'Basic eDp5' },
  { name: 'X-Forwarded-Client-Cert', value: 'By=spiffe://x;URI=spiffe://cluster.local/ns/argocd/sa/admin' },
  { name: 'X-Probe', value: 'kept' },
];

/** The headers the cluster saw on the last request to `path`. */
function seenBy(path: string): Record<string, unknown> {
  const r = cluster.requests.filter((x) => x.path === path).at(-1);
  expect(r, `a request for ${path} reached the cluster`).toBeDefined();
  return r!.headers;
}

describe('the agent strips identities from an Open even when the proxy did not', () => {
  it('sends the cluster its own credentials only: no Authorization, Impersonate-*, X-Remote-* or cookies from the Open', async () => {
    const tunnel = await tunnelTo({ filter: 'none' });
    const path = '/api/v1/namespaces/default/configmaps';
    const res = await call(tunnel, 'GET', path, SMUGGLED);
    expect(res.status).toBe(200);
    const seen = seenBy(path);
    expect(seen.authorization).toBe(`Bearer ${AGENT_TOKEN}`);
    const names = Object.keys(seen);
    expect(names.filter((n) => /^(impersonate-|x-remote-)/.test(n))).toEqual([]);
    for (const n of ['cookie', 'proxy-authorization', 'x-forwarded-client-cert'])
      expect(names).not.toContain(n);
    // Ordinary headers still pass: the stripping is by name, not everything.
    expect(seen['x-probe']).toBe('kept');
  });

  it('passes Impersonate-* on only when allowed, and still never the caller credentials or X-Remote-*', async () => {
    const tunnel = await tunnelTo({ filter: 'none', allowImpersonation: true });
    const path = '/api/v1/namespaces/kube-system/configmaps';
    await call(tunnel, 'GET', path, SMUGGLED);
    const seen = seenBy(path);
    expect(seen['impersonate-user']).toBe('system:admin');
    expect(seen['impersonate-group']).toBe('system:masters');
    expect(seen.authorization).toBe(`Bearer ${AGENT_TOKEN}`);
    expect(Object.keys(seen).filter((n) => n.startsWith('x-remote-'))).toEqual([]);
  });
});

describe('the managed gate', () => {
  it('shows an object managed through its owner chain, and answers 404 for unmanaged ones', async () => {
    const tunnel = await tunnelTo({ filter: 'managed' });
    const managed = await call(tunnel, 'GET', '/api/v1/namespaces/default/pods/guestbook-abc-1');
    expect(managed.status).toBe(200);
    expect(JSON.parse(managed.body).metadata.name).toBe('guestbook-abc-1');
    for (const path of [
      '/api/v1/namespaces/default/pods/stray',
      '/api/v1/namespaces/default/configmaps/plain',
    ]) {
      const hidden = await call(tunnel, 'GET', path);
      expect(hidden.status, path).toBe(404);
      expect(JSON.parse(hidden.body)).toMatchObject({
        kind: 'Status',
        reason: 'NotFound',
        message: NOT_MANAGED_MESSAGE,
      });
      // The body is the refusal, never the object.
      expect(hidden.body).not.toContain('not for argo');
    }
  });

  it('lists only managed items', async () => {
    const tunnel = await tunnelTo({ filter: 'managed' });
    const list = await call(tunnel, 'GET', '/api/v1/namespaces/default/pods');
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body).items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual([
      'guestbook-abc-1',
    ]);
  });

  it('refuses to delete an unmanaged object, which stays', async () => {
    const tunnel = await tunnelTo({ filter: 'managed' });
    const res = await call(tunnel, 'DELETE', '/api/v1/namespaces/default/pods/stray');
    expect(res.status).toBe(404);
    const direct = await fetch(`${cluster.url}/api/v1/namespaces/default/pods/stray`, {
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(direct.status).toBe(200);
  });
});
