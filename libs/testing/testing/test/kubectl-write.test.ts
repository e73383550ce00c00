import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, makeTempDir } from '../src/index.js';
import { eventually, type KubeFixture, startKubeFixture } from './kube-helpers.js';

let kube: KubeFixture;
const dir = makeTempDir('kubectl-write-');

beforeAll(async () => {
  kube = await startKubeFixture();
  kube.server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'work' } });
});
afterAll(async () => {
  await kube?.server.close();
});

const deployment = (labels: Record<string, string>, replicas = 2) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: work
  labels: ${JSON.stringify(labels)}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
`;

const getDeployment = (name = 'web') =>
  kube.server.store.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'work', name }) as
    | (KubeObject & {
        spec: { replicas: number; template: { spec: { containers: Record<string, unknown>[] } } };
      })
    | undefined;

describe('real kubectl against the fake API server (writes)', () => {
  it('apply --server-side creates, updates, prunes dropped fields and detects conflicts', async () => {
    const file = join(dir, 'web.yaml');
    await writeFile(file, deployment({ a: '1', b: '2' }));
    expect(await kube.ok('apply', '--server-side', '-f', file)).toContain(
      'deployment.apps/web serverside-applied',
    );
    const applyReq = kube.server.requests.find(
      (r) => r.method === 'PATCH' && r.path.endsWith('/deployments/web'),
    );
    expect(applyReq?.headers['content-type']).toBe('application/apply-patch+yaml');
    expect(applyReq?.query.fieldManager).toBe('kubectl');

    let live = getDeployment()!;
    expect(live.metadata.generation).toBe(1);
    expect(live.metadata.managedFields?.[0]).toMatchObject({ manager: 'kubectl', operation: 'Apply' });

    // Dropping label b from the manifest removes it from the object (it was only ours).
    await writeFile(file, deployment({ a: '1', c: '3' }));
    await kube.ok('apply', '--server-side', '-f', file);
    live = getDeployment()!;
    expect(live.metadata.labels).toEqual({ a: '1', c: '3' });

    // Someone else changes replicas: re-applying our value is a conflict unless forced.
    await kube.ok('scale', 'deploy/web', '-n', 'work', '--replicas=5');
    const conflict = await kube.kubectl('apply', '--server-side', '-f', file);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toMatch(
      /Apply failed with 1 conflict: conflict with "kubectl[^"]*" using apps\/v1: \.spec\.replicas/,
    );
    await kube.ok('apply', '--server-side', '--force-conflicts', '-f', file);
    expect(getDeployment()!.spec.replicas).toBe(2);
  });

  it('patch --type=json, merge and strategic', async () => {
    await kube.ok(
      'patch',
      'deploy',
      'web',
      '-n',
      'work',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/replicas","value":3}]',
    );
    expect(getDeployment()!.spec.replicas).toBe(3);

    await kube.ok(
      'patch',
      'deploy',
      'web',
      '-n',
      'work',
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{"c":null,"d":"4"}}}',
    );
    expect(getDeployment()!.metadata.labels).toEqual({ a: '1', d: '4' });

    // Strategic merge: the container list merges by name instead of being replaced.
    const sidecar = '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"envoy:1"}]}}}}';
    await kube.ok('patch', 'deploy', 'web', '-n', 'work', '--type=strategic', '-p', sidecar);
    let containers = getDeployment()!.spec.template.spec.containers;
    expect(containers.map((c) => c.name)).toEqual(['web', 'sidecar']);
    const remove = '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}';
    await kube.ok('patch', 'deploy', 'web', '-n', 'work', '-p', remove);
    containers = getDeployment()!.spec.template.spec.containers;
    expect(containers.map((c) => c.name)).toEqual(['web']);
    expect(containers[0]!.image).toBe('nginx:1.25');
  });

  it('strategic patch on a custom resource fails like the real server (415)', async () => {
    kube.server.store.put({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'guestbook', namespace: 'work' },
      spec: { project: 'default' },
    });
    const r = await kube.kubectl(
      'patch',
      'app',
      'guestbook',
      '-n',
      'work',
      '--type=strategic',
      '-p',
      '{"spec":{"project":"x"}}',
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('the body of the request was in an unknown format');
    await kube.ok(
      'patch',
      'app',
      'guestbook',
      '-n',
      'work',
      '--type=merge',
      '-p',
      '{"spec":{"project":"x"}}',
    );
  });

  it('create -f of an existing object reports AlreadyExists', async () => {
    const file = join(dir, 'cm.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: work}\ndata: {a: "1"}\n',
    );
    expect(await kube.ok('create', '-f', file)).toContain('configmap/settings created');
    const again = await kube.kubectl('create', '-f', file);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('Error from server (AlreadyExists)');
    expect(again.stderr).toContain('configmaps "settings" already exists');
  });

  it('client-side apply creates then patches (last-applied annotation)', async () => {
    const file = join(dir, 'csa.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa, namespace: work}\ndata: {a: "1", b: "2"}\n',
    );
    expect(await kube.ok('apply', '-f', file)).toContain('configmap/csa created');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa, namespace: work}\ndata: {a: "1"}\n',
    );
    expect(await kube.ok('apply', '-f', file)).toContain('configmap/csa configured');
    const cm = kube.server.store.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'work', name: 'csa' });
    expect(cm?.data).toEqual({ a: '1' });
    expect(cm?.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toBeTruthy();
  });

  it('delete removes the object (and its dependents); deleting again is NotFound', async () => {
    const owner = getDeployment()!;
    kube.server.store.put({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'web-1',
        namespace: 'work',
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: 'web',
            uid: owner.metadata.uid!,
            controller: true,
          },
        ],
      },
      spec: { replicas: 1 },
    });
    expect(await kube.ok('delete', 'deploy', 'web', '-n', 'work')).toContain('deployment.apps "web" deleted');
    expect(getDeployment()).toBeUndefined();
    expect(
      kube.server.store.get({ apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'work', name: 'web-1' }),
    ).toBeUndefined();
    const again = await kube.kubectl('delete', 'deploy', 'web', '-n', 'work');
    expect(again.stderr).toContain('Error from server (NotFound): deployments.apps "web" not found');
  });

  it('get -w prints ADDED/MODIFIED/DELETED as they happen and releases the watch', async () => {
    kube.server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'watched' } });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'watched', name: 'live' };
    const watch = kube.spawn('get', 'configmaps', '-n', 'watched', '-w', '--output-watch-events');
    try {
      await eventually(() => expect(kube.server.activeWatches()).toBe(1), 10_000);
      const watchReq = kube.server.requests.find(
        (r) => r.path === '/api/v1/namespaces/watched/configmaps' && r.query.watch,
      );
      expect(watchReq?.query.resourceVersion).toMatch(/^\d+$/);

      kube.server.store.put({ ...ref, metadata: { name: 'live', namespace: 'watched' }, data: { a: '1' } });
      await watch.waitFor(/ADDED\s+live\s+1/);
      kube.server.store.update(ref, (cm) => {
        cm.data = { a: '1', b: '2' };
      });
      await watch.waitFor(/MODIFIED\s+live\s+2/);
      kube.server.store.delete(ref);
      await watch.waitFor(/DELETED\s+live\s+2/);
    } finally {
      await watch.stop();
    }
    await eventually(() => expect(kube.server.activeWatches()).toBe(0));
  });
});
