import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SERVICE_ACCOUNT_USER, createTestPki } from '../src/index.js';
import { type KubeFixture, startKubeFixture } from './kube-helpers.js';

// kubectl against the strict fake directly: what kubectl can express of the strict checks.
const SA = AGENT_SERVICE_ACCOUNT_USER;
let kube: KubeFixture;

beforeAll(async () => {
  // TLS, because kubectl sends no bearer token over plain http.
  const pki = await createTestPki();
  const cert = await pki.serverCert();
  kube = await startKubeFixture({
    token: 'agent-sa-token',
    tls: { cert: cert.certPem, key: cert.keyPem, ca: pki.ca.certPem },
  });
  kube.server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'work' } });
});
afterAll(async () => {
  await kube?.server.close();
});

describe('kubectl against the strict fake', () => {
  it('--as is refused: the agent service account may not impersonate', async () => {
    const r = await kube.kubectl('--as=alice', 'get', 'pods', '-n', 'work');
    expect(r.code).not.toBe(0);
    // kubectl's aggregated-discovery client drops the Status message of a refused discovery ("unknown").
    expect(r.stderr).toContain('Error from server (Forbidden)');
    const raw = await kube.kubectl('--as=alice', 'get', '--raw', '/api/v1/namespaces/work/pods');
    expect(raw.code).not.toBe(0);
    expect(raw.stderr).toContain(
      `Error from server (Forbidden): users "alice" is forbidden: User "${SA}" cannot impersonate resource "users" in API group "" at the cluster scope`,
    );
  });

  it('--as works once impersonation is granted, and then the impersonated user’s rules apply', async () => {
    kube.server.setRbac(SA, [
      { verbs: ['impersonate'], apiGroups: [''], resources: ['users'], resourceNames: ['alice'] },
    ]);
    kube.server.setRbac('alice', [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], namespaces: ['work'] },
      { verbs: ['*'], nonResourceURLs: ['*'] },
    ]);
    try {
      expect(await kube.ok('--as=alice', 'get', 'pods', '-n', 'work', '-o', 'name')).toBe('');
      const secrets = await kube.kubectl('--as=alice', 'get', 'secrets', '-n', 'work');
      expect(secrets.stderr).toContain(
        'Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "work"',
      );
      expect(
        (await kube.kubectl('--as=alice', 'auth', 'can-i', 'list', 'secrets', '-n', 'work')).stdout.trim(),
      ).toBe('no');
      expect((await kube.ok('--as=alice', 'auth', 'can-i', 'list', 'pods', '-n', 'work')).trim()).toBe('yes');
      const bob = await kube.kubectl('--as=bob', 'get', '--raw', '/api/v1/namespaces/work/pods');
      expect(bob.stderr).toContain(`users "bob" is forbidden: User "${SA}" cannot impersonate`);
    } finally {
      kube.server.setRbac(SA, undefined);
      kube.server.setRbac('alice', undefined);
    }
  });

  it('reports RBAC refusals of the service account itself, and auth can-i agrees', async () => {
    kube.server.setRbac(SA, [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] },
      { verbs: ['*'], nonResourceURLs: ['*'] },
    ]);
    try {
      const r = await kube.kubectl('get', 'configmaps', '-n', 'work');
      expect(r.stderr).toContain(
        `Error from server (Forbidden): configmaps is forbidden: User "${SA}" cannot list resource "configmaps" in API group "" in the namespace "work"`,
      );
      expect((await kube.kubectl('auth', 'can-i', 'list', 'configmaps', '-n', 'work')).stdout.trim()).toBe(
        'no',
      );
      expect((await kube.ok('auth', 'can-i', 'get', 'pods', '-n', 'work')).trim()).toBe('yes');
    } finally {
      kube.server.setRbac(SA, undefined);
    }
  });

  it('create secret generic --from-literal stores base64 data', async () => {
    await kube.ok(
      'create',
      'secret',
      'generic',
      'lit',
      '-n',
      'work',
      '--from-literal=user=admin',
      '--from-literal=pw=s3cr3t!',
    );
    const data = JSON.parse(await kube.ok('get', 'secret', 'lit', '-n', 'work', '-o', 'jsonpath={.data}'));
    expect(data).toEqual({ user: 'YWRtaW4=', pw: Buffer.from('s3cr3t!').toString('base64') });
  });

  it('apply of a Secret with bad base64 fails with the decoder’s message; stringData is merged', async () => {
    const bad = await kube.kubectlWithInput(
      'apiVersion: v1\nkind: Secret\nmetadata: {name: bad, namespace: work}\ndata: {key: "not base64!"}\n',
      'apply',
      '-f',
      '-',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
    );
    await kube.kubectlWithInput(
      'apiVersion: v1\nkind: Secret\nmetadata: {name: strd, namespace: work}\ndata: {a: b2xk}\nstringData: {a: new, b: plain}\n',
      'apply',
      '-f',
      '-',
    );
    const obj = JSON.parse(await kube.ok('get', 'secret', 'strd', '-n', 'work', '-o', 'json'));
    expect(obj.data).toEqual({ a: 'bmV3', b: 'cGxhaW4=' });
    expect(obj).not.toHaveProperty('stringData');
    const ssa = await kube.kubectlWithInput(
      'apiVersion: v1\nkind: Secret\nmetadata: {name: ssa, namespace: work}\nstringData: {k: v}\n',
      'apply',
      '--server-side',
      '-f',
      '-',
    );
    expect(ssa.code, ssa.stderr).toBe(0);
    expect(await kube.ok('get', 'secret', 'ssa', '-n', 'work', '-o', 'jsonpath={.data.k}')).toBe('dg==');
  });
});
