import { describe, expect, it } from 'vitest';
import { ManagedResolver, type ObjectRef } from '../src/index.js';
import {
  deployment,
  FakeCluster,
  type Obj,
  ownerRef,
  pod,
  replicaSet,
  trackingId,
  uid,
} from './support/kube-fixtures.js';

/** A chain obj <- w1 <- w2 ... <- wN where only wN (N hops above obj) is tracked. */
function chain(cluster: FakeCluster, hops: number): Obj {
  let top: Obj = {
    apiVersion: 'example.com/v1',
    kind: 'Layer',
    metadata: {
      name: `layer-${hops}`,
      namespace: 'guestbook',
      uid: uid('layer'),
      annotations: {
        'argocd.argoproj.io/tracking-id': trackingId(
          'guestbook',
          'example.com',
          'Layer',
          'guestbook',
          `layer-${hops}`,
        ),
      },
    },
  };
  cluster.add(top);
  for (let i = hops - 1; i >= 1; i--) {
    const layer: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'Layer',
      metadata: {
        name: `layer-${i}`,
        namespace: 'guestbook',
        uid: uid('layer'),
        ownerReferences: [ownerRef(top)],
      },
    };
    cluster.add(layer);
    top = layer;
  }
  return pod('leaf', top);
}

function fleet(cluster: FakeCluster, pods = 500, sets = 5) {
  const deploy = deployment('guestbook-ui');
  const rss = Array.from({ length: sets }, (_, i) => replicaSet(`guestbook-ui-5d8f7c${i}`, deploy));
  cluster.add(deploy, ...rss);
  return Array.from({ length: pods }, (_, i) => pod(`guestbook-ui-${i}`, rss[i % sets]!));
}

describe('ManagedResolver: tracking and owner chains', () => {
  it('a tracked object is managed without any lookup', async () => {
    const cluster = new FakeCluster();
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.isManaged(deployment('guestbook-ui'))).toBe(true);
    expect(await r.resolve(deployment('x', 'guestbook', { tracked: false }))).toBe('unmanaged');
    expect(await r.resolve({ kind: 'Pod' })).toBe('unmanaged');
    expect(await r.resolve(null)).toBe('unmanaged');
    expect(cluster.count).toBe(0);
  });

  it('follows Pod -> ReplicaSet -> Deployment', async () => {
    const cluster = new FakeCluster();
    const [p] = fleet(cluster, 1, 1);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(p)).toBe('managed');
    expect(cluster.calls.map((c) => c.kind)).toEqual(['ReplicaSet', 'Deployment']);
    expect(cluster.calls[0]).toMatchObject({ apiVersion: 'apps/v1', namespace: 'guestbook' });
  });

  it.each([1, 2, 3, 4, 5])('an owner %i hop(s) up makes the object managed', async (hops) => {
    const cluster = new FakeCluster();
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(chain(cluster, hops))).toBe('managed');
    expect(cluster.count).toBe(hops);
  });

  it('an owner 6 hops up is beyond the depth limit', async () => {
    const cluster = new FakeCluster();
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(chain(cluster, 6))).toBe('unmanaged');
    expect(cluster.count).toBe(5);
    const deeper = new ManagedResolver({ getObject: cluster.getObject, maxDepth: 6 });
    expect(await deeper.resolve(chain(cluster, 6))).toBe('managed');
  });

  it('terminates on ownerReference cycles', async () => {
    const cluster = new FakeCluster();
    const a: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'Layer',
      metadata: { name: 'a', namespace: 'guestbook', uid: 'uid-a' },
    };
    const b: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'Layer',
      metadata: { name: 'b', namespace: 'guestbook', uid: 'uid-b' },
    };
    a.metadata.ownerReferences = [ownerRef(b)];
    b.metadata.ownerReferences = [ownerRef(a)];
    const self: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'Layer',
      metadata: { name: 's', namespace: 'guestbook', uid: 'uid-s' },
    };
    self.metadata.ownerReferences = [ownerRef(self)];
    cluster.add(a, b, self);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(a)).toBe('unmanaged');
    expect(cluster.count).toBe(1); // b, then a again is recognised as visited
    expect(await r.resolve(self)).toBe('unmanaged');
    expect(await r.resolve(pod('p', a))).toBe('unmanaged');
    // A cycle that also reaches a tracked owner is managed.
    const deploy = deployment('guestbook-ui');
    cluster.add(deploy);
    b.metadata.ownerReferences = [ownerRef(a), ownerRef(deploy)];
    cluster.add(b);
    r.clear();
    expect(await r.resolve(pod('q', a))).toBe('managed');
  });

  it('a missing owner (or a recreated one with another uid) gives unknown, never managed', async () => {
    const cluster = new FakeCluster();
    const deploy = deployment('guestbook-ui');
    const rs = replicaSet('guestbook-ui-5d8f7c', deploy);
    cluster.add(deploy); // rs is missing
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(pod('p', rs))).toBe('unknown');
    expect(await r.isManaged(pod('p', rs))).toBe(false);
    const recreated = replicaSet('guestbook-ui-5d8f7c', deploy);
    cluster.add(recreated);
    r.clear();
    expect(await r.resolve(pod('p', rs))).toBe('unknown');
    expect(await r.resolve(pod('p', recreated))).toBe('managed');
    expect(
      await r.resolve(pod('p', undefined, 'guestbook', { ownerReferences: [{ kind: 'ReplicaSet' }] })),
    ).toBe('unknown');
  });

  it('any managed owner among several suffices', async () => {
    const cluster = new FakeCluster();
    const loose = replicaSet('loose', undefined);
    const deploy = deployment('guestbook-ui');
    cluster.add(loose, deploy);
    const p = pod('p', undefined, 'guestbook', { ownerReferences: [ownerRef(loose), ownerRef(deploy)] });
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(p)).toBe('managed');
    expect(await r.resolve(pod('p2', loose))).toBe('unmanaged');
  });

  it('bounds lookups for objects with huge ownerReference fan-out', async () => {
    const cluster = new FakeCluster();
    const owners = Array.from({ length: 100 }, (_, i) => replicaSet(`rs-${i}`, undefined));
    cluster.add(...owners);
    const r = new ManagedResolver({ getObject: cluster.getObject, maxLookupsPerObject: 10 });
    const p = pod('p', undefined, 'guestbook', { ownerReferences: owners.map((o) => ownerRef(o)) });
    expect(await r.resolve(p)).toBe('unknown');
    expect(cluster.count).toBe(10);
  });

  it('uses label tracking with a custom key once switched, and drops cached verdicts', async () => {
    const cluster = new FakeCluster();
    const deploy = deployment('guestbook-ui', 'guestbook', { tracked: false });
    (deploy.metadata.labels as Record<string, string>)['argocd.example.com/app'] = 'guestbook';
    const rs = replicaSet('guestbook-ui-1', deploy);
    cluster.add(deploy, rs);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    expect(await r.resolve(pod('p', rs))).toBe('unmanaged');
    r.setTracking({ method: 'label', instanceLabelKey: 'argocd.example.com/app' });
    expect(r.tracking.method).toBe('label');
    expect(await r.resolve(pod('p', rs))).toBe('managed');
  });

  it('resolves references (Event subjects) with owners of cluster-scoped kinds', async () => {
    const cluster = new FakeCluster();
    const widget: Obj = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: {
        name: 'w',
        uid: uid('w'),
        annotations: { 'argocd.argoproj.io/tracking-id': 'apps:example.com/Widget:/w' },
      },
    };
    cluster.add(widget);
    const child = pod('child', widget);
    cluster.add(child);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    const ref: ObjectRef = { apiVersion: 'v1', kind: 'Pod', name: 'child', namespace: 'guestbook' };
    expect(await r.resolveRef(ref)).toBe('managed');
    expect(await r.resolveRef({ ...ref, name: 'gone' })).toBe('unknown');
    expect(await r.resolveRef({ ...ref, uid: 'other-uid' })).toBe('unknown');
  });
});

describe('ManagedResolver: caching', () => {
  it('500 pods owned by 5 ReplicaSets of one Deployment cost 6 lookups', async () => {
    const cluster = new FakeCluster();
    const pods = fleet(cluster);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    const check = r.forRequest();
    for (const p of pods) expect(await check.resolve(p)).toBe('managed');
    expect(cluster.count).toBe(6);
  });

  it('concurrent resolves share in-flight lookups', async () => {
    const cluster = new FakeCluster();
    const pods = fleet(cluster);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    const verdicts = await Promise.all(pods.map((p) => r.resolve(p)));
    expect(verdicts.every((v) => v === 'managed')).toBe(true);
    expect(cluster.count).toBe(6);
  });

  it('shares answers across requests for the TTL, then looks again', async () => {
    let now = 1_000_000;
    const cluster = new FakeCluster();
    const pods = fleet(cluster);
    const r = new ManagedResolver({ getObject: cluster.getObject, now: () => now, cacheTtlMs: 5000 });
    for (const p of pods) await r.forRequest().resolve(p);
    expect(cluster.count).toBe(6);
    now += 4000;
    for (const p of pods) await r.forRequest().resolve(p);
    expect(cluster.count).toBe(6);
    now += 1001;
    for (const p of pods) await r.forRequest().resolve(p);
    expect(cluster.count).toBe(12);
    r.clear();
    await r.resolve(pods[0]);
    expect(cluster.count).toBe(14);
  });

  it('negative answers are cached too, errors only within the request', async () => {
    const cluster = new FakeCluster();
    const deploy = deployment('guestbook-ui');
    const rs = replicaSet('guestbook-ui-1', deploy);
    cluster.add(deploy, rs);
    cluster.failing.add(cluster.keyOf(rs));
    const errors: ObjectRef[] = [];
    const r = new ManagedResolver({ getObject: cluster.getObject, onLookupError: (ref) => errors.push(ref) });
    const check = r.forRequest();
    expect(await check.resolve(pod('a', rs))).toBe('unknown');
    expect(await check.resolve(pod('b', rs))).toBe('unknown');
    expect(cluster.count).toBe(1);
    expect(errors).toHaveLength(1);
    cluster.failing.clear();
    expect(await r.resolve(pod('c', rs))).toBe('managed'); // a new request retries
    const gone = replicaSet('gone', deploy);
    expect(await r.resolve(pod('d', gone))).toBe('unknown');
    const before = cluster.count;
    expect(await r.resolve(pod('e', gone))).toBe('unknown');
    expect(cluster.count).toBe(before);
  });

  it('the per-request cache keeps a list cheap even when the shared cache is tiny', async () => {
    const cluster = new FakeCluster();
    const pods = fleet(cluster, 100, 5);
    const r = new ManagedResolver({ getObject: cluster.getObject, cacheSize: 1 });
    const check = r.forRequest();
    for (const p of pods) await check.resolve(p);
    expect(cluster.count).toBe(6);
  });

  it('a lookup that started before clear() does not repopulate the cache', async () => {
    const cluster = new FakeCluster();
    const [p] = fleet(cluster, 1, 1);
    const r = new ManagedResolver({ getObject: cluster.getObject });
    const pending = r.resolve(p);
    r.clear();
    expect(await pending).toBe('managed');
    await r.resolve(p);
    expect(cluster.count).toBe(3); // the ReplicaSet again; the Deployment was fetched after clear()
  });
});
