import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeKubeApiServer,
  type KubeObject,
  type ObjectRef,
  seedArgoDemo,
  startFakeKubeApiServer,
} from '../src/index.js';
import { TRACKING_ANNOTATION } from '../src/kube/index.js';

let server: FakeKubeApiServer;
beforeAll(async () => {
  server = await startFakeKubeApiServer();
});
afterAll(async () => {
  await server?.close();
});

/** The agent's rule: tracked itself, or an owner up to 5 levels up is. */
function isManaged(obj: KubeObject, depth = 0): boolean {
  if (obj.metadata.annotations?.[TRACKING_ANNOTATION]) return true;
  if (depth >= 5) return false;
  return (obj.metadata.ownerReferences ?? []).some((ref) => {
    const owner = server.store.get({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      namespace: obj.metadata.namespace,
      name: ref.name,
    });
    return owner !== undefined && isManaged(owner, depth + 1);
  });
}

describe('seedArgoDemo', () => {
  it('builds tracked Deployments with ReplicaSet/Pod ownership chains and unmanaged extras', () => {
    const demo = seedArgoDemo(server.store, { namespace: 'shop', apps: ['cart', 'checkout'], replicas: 3 });
    expect(demo.apps).toHaveLength(2);
    const cart = demo.apps[0]!;
    const deployment = server.store.get(cart.deployment)!;
    expect(deployment.metadata.annotations?.[TRACKING_ANNOTATION]).toBe('cart:apps/Deployment:shop/cart');
    expect(deployment.metadata.labels?.['app.kubernetes.io/instance']).toBe('cart');
    expect(server.store.get(cart.service)!.metadata.annotations?.[TRACKING_ANNOTATION]).toBe(
      'cart:/Service:shop/cart',
    );
    expect(cart.pods).toHaveLength(3);
    const get = (r: ObjectRef) => server.store.get(r)!;
    expect(demo.managed.every((r) => isManaged(get(r)))).toBe(true);
    expect(demo.unmanaged.every((r) => !isManaged(get(r)))).toBe(true);
    const events = server.store.list({ apiVersion: 'v1', kind: 'Event', namespace: 'shop' });
    expect(events.some((e) => (e.involvedObject as { name: string }).name === cart.pods[0]!.name)).toBe(true);
    expect(server.store.get(cart.application!)!.status).toMatchObject({ sync: { status: 'Synced' } });
  });

  it('cascades deletion of a Deployment to its ReplicaSet and Pods (garbage collection)', () => {
    const demo = seedArgoDemo(server.store, { namespace: 'gc', apps: ['solo'] });
    const app = demo.apps[0]!;
    const seen: string[] = [];
    const off = server.store.onChange((ev) => {
      if (ev.type === 'DELETED') seen.push(`${ev.object.kind}/${ev.object.metadata.name}`);
    });
    server.store.delete(app.deployment);
    off();
    expect(server.store.get(app.replicaSet)).toBeUndefined();
    expect(app.pods.every((p) => server.store.get(p) === undefined)).toBe(true);
    expect(seen).toContain(`Pod/${app.pods[0]!.name}`);
    expect(server.store.get(demo.unmanaged[0]!)).toBeDefined();
  });
});
