import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runKubectl, spawnKubectl, waitFor } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});

const kubectl = async (args: string[], opts: { kubeconfig?: string; input?: string } = {}) => {
  const r = await runKubectl(args, {
    kubeconfig: opts.kubeconfig ?? h.certKubeconfig,
    ...(opts.input ? { input: opts.input } : {}),
  });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
};

describe('kubectl through the resource proxy', () => {
  it('shows only what Argo CD manages: tracked objects and what they own', async () => {
    const pods = await kubectl(['get', 'pods', '-n', 'demo', '-o', 'name']);
    expect(pods).toMatch(/pod\/guestbook-/);
    expect(pods).not.toMatch(/debug-shell/);
    const r = await runKubectl(['get', 'configmap', 'unmanaged-config', '-n', 'demo'], {
      kubeconfig: h.certKubeconfig,
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/NotFound.*resource not managed by app|resource not managed by app/);
    const patch = await runKubectl(
      ['patch', 'configmap', 'unmanaged-config', '-n', 'demo', '--type=merge', '-p', '{"data":{"x":"y"}}'],
      {
        kubeconfig: h.certKubeconfig,
      },
    );
    expect(patch.code).not.toBe(0);
    expect(
      h.cluster.store.get({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'demo',
        name: 'unmanaged-config',
      })?.data,
    ).not.toHaveProperty('x');
    // A named read of a managed object costs the cluster one request, not a check plus a read.
    h.cluster.clearRequests();
    expect(await kubectl(['get', 'deploy', 'guestbook', '-n', 'demo', '-o', 'name'])).toBe(
      'deployment.apps/guestbook\n',
    );
    expect(h.cluster.requests.filter((r) => r.path.endsWith('/deployments/guestbook'))).toHaveLength(1);
    const create = await runKubectl(
      ['create', 'configmap', 'untracked', '-n', 'demo', '--from-literal=a=b'],
      { kubeconfig: h.certKubeconfig },
    );
    expect(create.code).not.toBe(0);
    expect(create.stderr).toMatch(/not managed/);
  });

  it('gets resources with a client certificate and with a scoped token behind /clusters/<agent>', async () => {
    for (const kubeconfig of [h.certKubeconfig, h.tokenKubeconfig]) {
      const out = await kubectl(['get', 'deploy', '-n', 'demo', '-o', 'name'], { kubeconfig });
      expect(out.split('\n').filter(Boolean).sort()).toEqual([
        'deployment.apps/guestbook',
        'deployment.apps/podinfo',
      ]);
    }
  });

  it("forwards the agent's own credentials, never the caller's", async () => {
    h.cluster.clearRequests();
    await kubectl(['get', 'pods', '-n', 'demo'], { kubeconfig: h.tokenKubeconfig });
    const seen = h.cluster.requests.filter((r) => r.path.includes('/pods'));
    expect(seen.length).toBeGreaterThan(0);
    for (const r of seen) expect(r.headers.authorization).toBe('Bearer agent-sa-token');
    // kubectl asks for a Table; the Accept header made it through.
    expect(seen.some((r) => String(r.headers.accept).includes('as=Table'))).toBe(true);
  });

  it('shows YAML, describes, lists API resources and serves raw discovery', async () => {
    const pod = h.cluster.store
      .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
      .find((p) => p.metadata.name?.startsWith('guestbook'))!;
    const name = pod.metadata.name!;
    expect(await kubectl(['get', 'pod', name, '-n', 'demo', '-o', 'yaml'])).toContain(`name: ${name}`);
    expect(await kubectl(['describe', 'pod', name, '-n', 'demo'])).toMatch(/Controlled By:\s+ReplicaSet/);
    expect(await kubectl(['api-resources'])).toMatch(/deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
    expect(JSON.parse(await kubectl(['get', '--raw', '/openapi/v3']))).toHaveProperty('paths');
    expect(JSON.parse(await kubectl(['get', '--raw', '/version']))).toHaveProperty('gitVersion');
    const apis = JSON.parse(await kubectl(['get', '--raw', '/apis'])) as { kind: string };
    expect(apis.kind).toMatch(/APIGroupList|APIGroupDiscoveryList/);
  });

  it('paginates with --chunk-size through limit and continue', async () => {
    for (let i = 0; i < 5; i++) {
      h.cluster.store.put({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: `page-${i}`,
          namespace: 'demo',
          annotations: { 'argocd.argoproj.io/tracking-id': 'guestbook:/ConfigMap:demo/page' },
        },
        data: { i: String(i) },
      });
    }
    h.cluster.clearRequests();
    const out = await kubectl(['get', 'configmaps', '-n', 'demo', '--chunk-size=2', '-o', 'name']);
    for (let i = 0; i < 5; i++) expect(out).toContain(`configmap/page-${i}`);
    const pages = h.cluster.requests.filter((r) => r.path.endsWith('/configmaps'));
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.every((r) => r.query.limit === '2')).toBe(true);
    expect(pages.slice(1).every((r) => typeof r.query.continue === 'string' && r.query.continue !== '')).toBe(
      true,
    );
  });

  it('streams watch events as they happen and releases the upstream watch when kubectl stops', async () => {
    const before = h.cluster.activeWatches();
    const tracked = { 'argocd.argoproj.io/tracking-id': 'guestbook:/ConfigMap:demo/live' };
    h.cluster.store.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'watch-seed', namespace: 'demo', annotations: tracked },
    });
    // Table output: the watch goes through the agent's table and watch filters.
    const watch = spawnKubectl(['get', 'configmaps', '-n', 'demo', '-w', '--output-watch-events'], {
      kubeconfig: h.certKubeconfig,
    });
    await watch.waitFor(/ADDED\s+watch-seed/);
    h.cluster.store.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'live', namespace: 'demo', annotations: tracked },
      data: { v: '1' },
    });
    await watch.waitFor(/ADDED\s+live/);
    h.cluster.store.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'live', namespace: 'demo', annotations: tracked },
      data: { v: '2' },
    });
    await watch.waitFor(/MODIFIED\s+live/);
    h.cluster.store.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'demo', name: 'live' });
    await watch.waitFor(/DELETED\s+live/);
    // Unmanaged objects never show up, not even in the initial list.
    h.cluster.store.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'hand-made', namespace: 'demo' },
    });
    // A managed object put afterwards: once its event shows, the watch has passed the
    // unmanaged one (events come in resourceVersion order), so its absence is proven.
    h.cluster.store.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'later-managed', namespace: 'demo', annotations: tracked },
    });
    await watch.waitFor(/ADDED\s+later-managed/);
    expect(watch.stdout()).not.toMatch(/unmanaged-config|\shand-made\s/);
    expect(h.cluster.activeWatches()).toBe(before + 1);
    await watch.stop();
    await waitFor(() => h.cluster.activeWatches() === before);
  });

  it('follows logs line by line and releases the stream when kubectl stops', async () => {
    const pod = h.cluster.store
      .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
      .find((p) => p.metadata.name?.startsWith('guestbook'))!;
    const name = pod.metadata.name!;
    const logs = spawnKubectl(['logs', '-f', name, '-n', 'demo'], { kubeconfig: h.certKubeconfig });
    await waitFor(() => h.cluster.activeLogFollows() === 1);
    h.cluster.store.appendPodLog('demo', name, 'first line');
    await logs.waitFor('first line');
    h.cluster.store.appendPodLog('demo', name, 'second line');
    await logs.waitFor('second line');
    expect(logs.stdout()).toMatch(/first line\nsecond line\n$/);
    await logs.stop();
    await waitFor(() => h.cluster.activeLogFollows() === 0);
    expect(h.cluster.activeLogFollows()).toBe(0);
  });

  it('applies server-side, patches with every patch type, and deletes', async () => {
    const manifest = path.join(h.dir, 'cm.yaml');
    writeFileSync(
      manifest,
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: applied',
        '  namespace: demo',
        '  annotations:',
        '    argocd.argoproj.io/tracking-id: "guestbook:/ConfigMap:demo/applied"',
        'data:',
        '  a: "1"',
        '',
      ].join('\n'),
    );
    expect(
      await kubectl(['apply', '--server-side', '--field-manager=argocd-controller', '-f', manifest]),
    ).toMatch(/serverside-applied/);
    h.cluster.clearRequests();
    await kubectl([
      'patch',
      'configmap',
      'applied',
      '-n',
      'demo',
      '--type=merge',
      '-p',
      '{"data":{"b":"2"}}',
    ]);
    await kubectl([
      'patch',
      'configmap',
      'applied',
      '-n',
      'demo',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/data/c","value":"3"}]',
    ]);
    await kubectl([
      'patch',
      'deployment',
      'guestbook',
      '-n',
      'demo',
      '--type=strategic',
      '-p',
      '{"spec":{"replicas":3}}',
    ]);
    const types = h.cluster.requests
      .filter((r) => r.method === 'PATCH')
      .map((r) => String(r.headers['content-type']));
    expect(types).toEqual([
      'application/merge-patch+json',
      'application/json-patch+json',
      'application/strategic-merge-patch+json',
    ]);
    const cm = h.cluster.store.get({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'demo',
      name: 'applied',
    });
    expect(cm?.data).toEqual({ a: '1', b: '2', c: '3' });
    await kubectl(['delete', 'configmap', 'applied', '-n', 'demo']);
    expect(
      h.cluster.store.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'demo', name: 'applied' }),
    ).toBeUndefined();
  });
});
