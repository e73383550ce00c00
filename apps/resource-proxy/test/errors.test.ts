import { rmSync } from 'node:fs';
import { AGENT_SERVICE_ACCOUNT_USER, FULL_ACCESS_RULES, waitFor } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

let h: Harness;
let callerCert: { certPem: string; keyPem: string };
beforeAll(async () => {
  h = await startHarness();
  callerCert = await h.pki.callerCert('agent-a');
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});

/** The proxy's audit line for the first request to `path`, once it is written. */
async function waitForAudit(path: string) {
  const find = () => h.lines.find((l) => l.msg === 'resource proxy request' && l.path === path);
  await waitFor(() => find() !== undefined);
  return find();
}

const status = (body: string) =>
  JSON.parse(body) as { kind: string; code: number; message: string; reason: string };

describe('every failure is a Kubernetes Status with the right code', () => {
  it('401 without credentials, and with credentials nobody issued', async () => {
    const none = await h.call('GET', '/api');
    expect(none.status).toBe(401);
    expect(status(none.body)).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
    const foreign = await h.pki.foreignCa();
    const forged = await h.call('GET', '/api', { cert: foreign.client });
    expect(forged.status).toBe(401);
    const other = await (await import('@pullplane/auth')).TokenAuthority.generate({
      audience: 'resource-proxy',
    });
    const badToken = await h.call('GET', '/clusters/agent-a/api', {
      token: await other.issue('mallory', { agents: ['agent-a'] }),
    });
    expect(badToken.status).toBe(401);
  });

  it('403 when the credentials do not cover the agent asked for', async () => {
    const r = await h.call('GET', '/clusters/agent-b/api', { cert: callerCert });
    expect(r.status).toBe(403);
    expect(status(r.body).message).toMatch(/may not reach agent agent-b/);
    const scoped = await h.tokens.issue('argocd-server', { agents: ['agent-c'] });
    expect((await h.call('GET', '/clusters/agent-a/api', { token: scoped })).status).toBe(403);
    expect((await h.call('GET', '/k8s/clusters/agent-a/api', { token: scoped })).status).toBe(403);
  });

  it('502 (not a 504 timeout) when the agent is not connected', async () => {
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a', 'agent-z'] });
    const r = await h.call('GET', '/clusters/agent-z/api', { token });
    expect(r.status).toBe(502);
    expect(status(r.body).message).toMatch(/^Agent is not connected/);
  });

  it('400 for malformed and traversing paths', async () => {
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a'] });
    // Sent byte for byte: HTTP clients would normalise these paths before sending.
    for (const p of [
      '/clusters/agent-a/api/v1/namespaces/../secrets',
      '/clusters/agent-a/api/v1/namespaces/./secrets',
      '/clusters/agent-a/../agent-b/api',
      '/clusters/agent-a/api/v1/namespaces/%2e%2e/secrets',
      '/clusters/agent-a/api/v1/namespaces/demo%2fsecrets',
      '/clusters/agent-a/api/v1/namespaces/demo%5c..%5csecrets',
      '/clusters/agent-a//api',
      '/clusters/Agent_A/api',
      '/clusters/agent-a/api/v1/namespaces/demo/pods/x/exec?command=sh',
      '/clusters/agent-a/api/v1/namespaces/demo/pods/x/portforward',
    ]) {
      const raw = await h.raw(
        `GET ${p} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw, p).toMatch(/^HTTP\/1\.1 400 /);
      expect(raw, p).toContain('"reason":"BadRequest"');
    }
  });

  it('strips impersonation, cookies and identity headers before the agent', async () => {
    h.cluster.clearRequests();
    const r = await h.call('GET', '/api/v1/namespaces/demo/pods', {
      cert: callerCert,
      headers: {
        'impersonate-user': 'system:admin',
        'impersonate-group': 'system:masters',
        cookie: 'session=1',
        'x-forwarded-client-cert': 'URI=spiffe://x/ns/y/sa/z',
      },
    });
    expect(r.status).toBe(200);
    const seen = h.cluster.requests.find((q) => q.path.endsWith('/pods'))!;
    for (const name of ['impersonate-user', 'impersonate-group', 'cookie', 'x-forwarded-client-cert']) {
      expect(seen.headers[name], name).toBeUndefined();
    }
  });

  it('answers a protobuf-only client in JSON: the agent asks the cluster for JSON, which it can filter', async () => {
    h.cluster.clearRequests();
    const r = await h.call('GET', '/api/v1/namespaces/demo/pods', {
      cert: callerCert,
      headers: { accept: 'application/vnd.kubernetes.protobuf' },
    });
    // The strict cluster would answer 406 to the protobuf-only Accept had it reached it unchanged.
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'PodList' });
    expect(h.cluster.requests.find((q) => q.path.endsWith('/pods'))?.headers.accept).toBe('application/json');
  });

  it('413 for a body over the limit', async () => {
    const big = JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'big' },
      data: { x: 'y'.repeat(70_000) },
    });
    const r = await h.call('POST', '/api/v1/namespaces/demo/configmaps', { cert: callerCert, body: big });
    expect(r.status).toBe(413);
    expect(status(r.body).reason).toBe('RequestEntityTooLarge');
  });

  it("passes the cluster's own RBAC refusal through, Status for Status", async () => {
    // The agent's service account may read what the proxy shows, but not Secrets.
    h.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, [
      {
        verbs: ['get', 'list', 'watch'],
        apiGroups: ['', 'apps'],
        resources: ['pods', 'configmaps', 'deployments'],
      },
    ]);
    try {
      const r = await h.call('GET', '/api/v1/namespaces/demo/secrets', { cert: callerCert });
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body)).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `secrets is forbidden: User "${AGENT_SERVICE_ACCOUNT_USER}" cannot list resource "secrets" in API group "" in the namespace "demo"`,
        reason: 'Forbidden',
        details: { kind: 'secrets' },
        code: 403,
      });
    } finally {
      h.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, undefined);
    }
  });

  it('hides a pod whose owner the agent may not read: the forbidden owner lookup proves nothing', async () => {
    // A fresh owner chain, so no verdict cached by earlier requests answers for it.
    const dep = h.cluster.store.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'rbac-web',
        namespace: 'demo',
        annotations: { 'argocd.argoproj.io/tracking-id': 'rbac-web:apps/Deployment:demo/rbac-web' },
      },
      spec: { selector: { matchLabels: { app: 'rbac-web' } } },
    });
    const ownedBy = (o: typeof dep) => [
      {
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.metadata.name!,
        uid: o.metadata.uid!,
        controller: true,
      },
    ];
    const rs = h.cluster.store.put({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'rbac-web-1', namespace: 'demo', ownerReferences: ownedBy(dep) },
      spec: { selector: { matchLabels: { app: 'rbac-web' } } },
    });
    const pod = (name: string) =>
      h.cluster.store.put({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'demo', ownerReferences: ownedBy(rs) },
        spec: { containers: [{ name: 'web', image: 'web:1' }] },
      });
    pod('rbac-web-hidden');
    pod('rbac-web-shown');
    h.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, [
      { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods', 'configmaps'] },
      { verbs: ['get', 'list', 'watch'], apiGroups: ['apps'], resources: ['deployments'] },
    ]);
    h.cluster.clearRequests();
    try {
      const hidden = await h.call('GET', '/api/v1/namespaces/demo/pods/rbac-web-hidden', {
        cert: callerCert,
      });
      expect(hidden.status).toBe(404);
      const lookup = h.cluster.requests.find(
        (q) => q.path === '/apis/apps/v1/namespaces/demo/replicasets/rbac-web-1',
      );
      expect(lookup).toMatchObject({ status: 403, user: AGENT_SERVICE_ACCOUNT_USER });
    } finally {
      h.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, undefined);
    }
    // The same chain, readable: the other pod (not cached) is shown.
    const shown = await h.call('GET', '/api/v1/namespaces/demo/pods/rbac-web-shown', { cert: callerCert });
    expect(shown.status).toBe(200);
  });

  it('504 when the agent does not answer within --request-timeout', async () => {
    h.cluster.setFault((req) => (req.path.endsWith('/services') ? { hang: true } : undefined));
    try {
      // The cluster never answers: only the deadline can produce this reply.
      const r = await h.call('GET', '/api/v1/namespaces/demo/services', { cert: callerCert });
      expect(r.status).toBe(504);
      expect(status(r.body).reason).toBe('Timeout');
    } finally {
      h.cluster.setFault(undefined);
    }
  });

  it('504 when a watch gets no head within --request-timeout, and the cluster request ends with it', async () => {
    h.cluster.setFault((req) =>
      req.path.endsWith('/limitranges') && req.query.get('watch') === '1' ? { hang: true } : undefined,
    );
    try {
      // The cluster never answers the watch: only the deadline can produce this reply.
      const r = await h.call('GET', '/api/v1/namespaces/demo/limitranges?watch=1', { cert: callerCert });
      expect(r.status).toBe(504);
      expect(status(r.body)).toMatchObject({ reason: 'Timeout', message: expect.stringMatching(/2000 ms/) });
      await waitFor(() => h.cluster.heldRequests() === 0);
    } finally {
      h.cluster.setFault(undefined);
    }
  });

  it('cuts an answer whose body stalls after its head at --request-timeout, and the cluster request with it', async () => {
    h.cluster.setFault((req) =>
      req.path.endsWith('/persistentvolumeclaims')
        ? { stallBody: '{"kind":"PersistentVolumeClaimList","apiVersion":"v1","items":[' }
        : undefined,
    );
    try {
      // The cluster sends a head and the start of a body, then nothing: only the deadline ends it.
      const r = await h
        .call('GET', '/api/v1/namespaces/demo/persistentvolumeclaims', { cert: callerCert })
        .then(
          (ok) => ok,
          (err: Error) => err,
        );
      expect(r).toBeInstanceOf(Error);
      const audit = await waitForAudit('/api/v1/namespaces/demo/persistentvolumeclaims');
      expect(audit).toMatchObject({ status: 200, error: 'the answer was not complete within 2000 ms' });
      // The agent gave up its request to the cluster too.
      await waitFor(() => h.cluster.heldRequests() === 0);
    } finally {
      h.cluster.setFault(undefined);
    }
  });

  it('sends a GET again, once, when the API server closed its kept-alive connection under it; never a POST', async () => {
    const path = '/api/v1/namespaces/demo/services';
    // A request first, so the agent holds a kept-alive connection to reuse.
    expect((await h.call('GET', path, { cert: callerCert })).status).toBe(200);
    let closed = 0;
    h.cluster.setFault((req) =>
      req.path.endsWith('/services') && closed++ === 0 ? { destroy: true } : undefined,
    );
    try {
      h.cluster.clearRequests();
      const r = await h.call('GET', path, { cert: callerCert });
      expect(r.status).toBe(200);
      expect(h.cluster.requests.filter((q) => q.path === path).length).toBe(2);

      // A kept-alive connection again (the fault spent), then the same close under a POST.
      expect((await h.call('GET', path, { cert: callerCert })).status).toBe(200);
      closed = 0;
      h.cluster.clearRequests();
      const post = await h.call('POST', path, {
        cert: callerCert,
        body: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: {
            name: 'again',
            namespace: 'demo',
            annotations: { 'argocd.argoproj.io/tracking-id': 'again:/Service:demo/again' },
          },
          spec: { ports: [{ port: 80 }] },
        }),
      });
      expect(post.status).toBe(500);
      expect(h.cluster.requests.filter((q) => q.path === path).length).toBe(1);
    } finally {
      h.cluster.setFault(undefined);
    }
  });

  it('500 when the cluster API itself fails', async () => {
    h.cluster.setFault((req) => (req.path.endsWith('/endpoints') ? { destroy: true } : undefined));
    try {
      const r = await h.call('GET', '/api/v1/namespaces/demo/endpoints', { cert: callerCert });
      expect(r.status).toBe(500);
      expect(status(r.body).message).toMatch(/cluster API/);
    } finally {
      h.cluster.setFault(undefined);
    }
  });
});

describe('an agent with the resource proxy disabled', () => {
  let off: Harness;
  beforeAll(async () => {
    off = await startHarness({ enableResourceProxy: false });
  }, 60_000);
  afterAll(async () => {
    await off?.close();
    if (off) rmSync(off.dir, { recursive: true, force: true });
  });

  it('answers 503 with a Status saying so, not a 504 timeout', async () => {
    const cert = await off.pki.callerCert('agent-a');
    const r = await off.call('GET', '/api', { cert });
    expect(r.status).toBe(503);
    expect(status(r.body).message).toMatch(/resource proxy is disabled on agent agent-a/);
  });
});

describe('an agent with --resource-proxy-filter=none', () => {
  let open: Harness;
  beforeAll(async () => {
    open = await startHarness({ resourceProxyFilter: 'none' });
  }, 60_000);
  afterAll(async () => {
    await open?.close();
    if (open) rmSync(open.dir, { recursive: true, force: true });
  });

  it('shows unmanaged objects too (the documented risk)', async () => {
    const cert = await open.pki.callerCert('agent-a');
    const r = await open.call('GET', '/api/v1/namespaces/demo/configmaps/unmanaged-config', { cert });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ metadata: { name: 'unmanaged-config' } });
  });
});

describe('impersonation, when enabled for a caller', () => {
  let imp: Harness;
  beforeAll(async () => {
    imp = await startHarness({ impersonators: ['argocd-server'] });
    // What an operator enabling impersonation adds: the agent's service account may impersonate alice.
    imp.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, [
      ...FULL_ACCESS_RULES,
      { verbs: ['impersonate'], apiGroups: [''], resources: ['users'], resourceNames: ['alice'] },
    ]);
  }, 60_000);
  afterAll(async () => {
    await imp?.close();
    if (imp) rmSync(imp.dir, { recursive: true, force: true });
  });

  it('passes Impersonate-* through for an allowed caller only', async () => {
    const allowed = await imp.tokens.issue('argocd-server', { agents: ['agent-a'] });
    const other = await imp.tokens.issue('someone-else', { agents: ['agent-a'] });
    const headers = { 'impersonate-user': 'alice' };
    for (const [token, expected] of [
      [allowed, 'alice'],
      [other, undefined],
    ] as const) {
      imp.cluster.clearRequests();
      const r = await imp.call('GET', '/clusters/agent-a/api/v1/namespaces/demo/pods', { token, headers });
      expect(r.status).toBe(200);
      expect(imp.cluster.requests.find((q) => q.path.endsWith('/pods'))?.headers['impersonate-user']).toBe(
        expected,
      );
    }
  });

  it("relays the cluster's 403 when the agent's service account may not impersonate that user", async () => {
    const allowed = await imp.tokens.issue('argocd-server', { agents: ['agent-a'] });
    const r = await imp.call('GET', '/clusters/agent-a/api/v1/namespaces/demo/pods', {
      token: allowed,
      headers: { 'impersonate-user': 'bob' },
    });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: `users "bob" is forbidden: User "${AGENT_SERVICE_ACCOUNT_USER}" cannot impersonate resource "users" in API group "" at the cluster scope`,
    });
  });
});
