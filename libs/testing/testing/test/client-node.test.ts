import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  type V1ConfigMap,
  type V1Pod,
  Watch,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../src/index.js';
import { eventually, pod } from './kube-helpers.js';

let server: FakeKubeApiServer;
let kc: KubeConfig;
let core: CoreV1Api;

beforeAll(async () => {
  server = await startFakeKubeApiServer();
  kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'cn' } });
});
afterAll(async () => {
  await server?.close();
});

interface WatchEvent {
  type: string;
  object: {
    kind?: string;
    code?: number;
    reason?: string;
    metadata?: { name?: string; resourceVersion?: string };
  };
}

function startWatch(path: string, query: Record<string, string | number | boolean>) {
  const events: WatchEvent[] = [];
  let ended: unknown = 'open';
  const controller = new Watch(kc).watch(
    path,
    query,
    (type, object) => events.push({ type, object }),
    (err) => {
      ended = err ?? null;
    },
  );
  return { events, ended: () => ended, abort: async () => (await controller).abort() };
}

describe('@kubernetes/client-node against the fake API server', () => {
  it('lists with limit and continue', async () => {
    for (let i = 0; i < 7; i++) server.store.put(pod('cn', `page-${i}`));
    const names: string[] = [];
    let token: string | undefined;
    let pages = 0;
    const versions = new Set<string | undefined>();
    do {
      const list = await core.listNamespacedPod({
        namespace: 'cn',
        limit: 3,
        ...(token === undefined ? {} : { _continue: token }),
      });
      versions.add(list.metadata?.resourceVersion);
      names.push(...list.items.map((p) => p.metadata?.name ?? ''));
      token = list.metadata?._continue;
      pages++;
      // A write between pages must not leak into later pages: they are served at the first page's version.
      if (pages === 1) server.store.put(pod('cn', 'page-9'));
    } while (token);
    expect(pages).toBe(3);
    expect(versions.size).toBe(1);
    expect(names).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4', 'page-5', 'page-6']);
    expect((await core.listNamespacedPod({ namespace: 'cn' })).items).toHaveLength(8);
  });

  it('creates, reads, replaces with optimistic concurrency and maps errors to ApiException', async () => {
    const created = await core.createNamespacedConfigMap({
      namespace: 'cn',
      body: { metadata: { generateName: 'gen-' }, data: { a: '1' } },
    });
    const name = created.metadata?.name ?? '';
    expect(name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(created.metadata?.uid).toBeTruthy();

    const stale: V1ConfigMap = { ...created, data: { a: 'stale' } };
    await core.replaceNamespacedConfigMap({ name, namespace: 'cn', body: { ...created, data: { a: '2' } } });
    await expect(
      core.replaceNamespacedConfigMap({ name, namespace: 'cn', body: stale }),
    ).rejects.toMatchObject({
      code: 409,
    });
    await expect(core.readNamespacedConfigMap({ name: 'missing', namespace: 'cn' })).rejects.toMatchObject({
      code: 404,
    });
    const apps = kc.makeApiClient(AppsV1Api);
    await expect(apps.readNamespacedDeployment({ name: 'nope', namespace: 'cn' })).rejects.toThrow(
      /not found/,
    );
  });

  it('server-side applies through KubernetesObjectApi', async () => {
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const spec: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ssa', namespace: 'cn' },
      data: { k: 'v' },
    };
    const applied = await objects.patch(
      spec,
      undefined,
      undefined,
      'my-controller',
      true,
      'application/apply-patch+yaml',
    );
    expect(applied.metadata?.managedFields?.[0]?.manager).toBe('my-controller');
  });

  it('Watch receives ADDED, MODIFIED and DELETED and the server forgets the watch on abort', async () => {
    const rv = (await core.listNamespacedConfigMap({ namespace: 'cn' })).metadata?.resourceVersion ?? '';
    const watch = startWatch('/api/v1/namespaces/cn/configmaps', {
      resourceVersion: rv,
      labelSelector: 'team=a',
    });
    await eventually(() => expect(server.activeWatches()).toBe(1));
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'cn', name: 'w' };
    server.store.put({ ...ref, metadata: { name: 'w', namespace: 'cn', labels: { team: 'a' } }, data: {} });
    server.store.put({ ...ref, metadata: { name: 'other', namespace: 'cn', labels: { team: 'b' } } });
    server.store.update(ref, (cm) => {
      cm.data = { x: '1' };
    });
    // Leaving the selector looks like a deletion to this watcher.
    server.store.update(ref, (cm) => {
      cm.metadata.labels = { team: 'b' };
    });
    await eventually(() =>
      expect(watch.events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual([
        'ADDED w',
        'MODIFIED w',
        'DELETED w',
      ]),
    );
    await watch.abort();
    await eventually(() => expect(server.activeWatches()).toBe(0));
  });

  it('Watch from a compacted resourceVersion gets a 410 Expired ERROR event', async () => {
    const old = server.store.resourceVersion();
    server.store.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bump', namespace: 'cn' } });
    server.store.compact();
    const watch = startWatch('/api/v1/namespaces/cn/configmaps', { resourceVersion: old });
    await eventually(() => expect(watch.events).toHaveLength(1));
    expect(watch.events[0]).toMatchObject({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired' },
    });
    await eventually(() => expect(watch.ended()).toBeNull());
  });

  it('Watch sends bookmarks when allowed', async () => {
    const s = await startFakeKubeApiServer({ bookmarkIntervalMs: 50 });
    try {
      const k = new KubeConfig();
      k.loadFromString(s.kubeconfig());
      const events: string[] = [];
      const controller = await new Watch(k).watch(
        '/api/v1/pods',
        { allowWatchBookmarks: true, resourceVersion: s.store.resourceVersion() },
        (type) => events.push(type),
        () => undefined,
      );
      await eventually(() => expect(events).toContain('BOOKMARK'));
      controller.abort();
    } finally {
      await s.close();
    }
  });

  it('an informer lists, watches and follows changes', async () => {
    const informer = makeInformer<V1Pod>(kc, '/api/v1/namespaces/cn/pods', () =>
      core.listNamespacedPod({ namespace: 'cn' }),
    );
    const added: string[] = [];
    const deleted: string[] = [];
    informer.on('add', (p) => added.push(p.metadata?.name ?? ''));
    informer.on('delete', (p) => deleted.push(p.metadata?.name ?? ''));
    await informer.start();
    try {
      await eventually(() => expect(added).toContain('page-0'));
      server.store.put(pod('cn', 'late'));
      await eventually(() => expect(added).toContain('late'));
      server.store.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'cn', name: 'late' });
      await eventually(() => expect(deleted).toContain('late'));
      expect(informer.list('cn').length).toBe(8);
    } finally {
      await informer.stop();
    }
  });
});
