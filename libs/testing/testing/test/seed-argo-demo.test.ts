import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeKubeApiServer,
  type KubeObject,
  type ObjectRef,
  seedArgoDemo,
  startFakeKubeApiServer,
} from '../src/index.js';
import { TRACKING_ANNOTATION } from '../src/kube/index.js';
import { channels } from './support/stream-clients.js';

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

  it('seeds pods that exec, attach and port-forward work on (the embedded demo)', async () => {
    const demo = seedArgoDemo(server.store, { namespace: 'live', apps: ['web'], replicas: 1 });
    const pod = demo.apps[0]!.pods[0]!.name;
    const base = `/api/v1/namespaces/live/pods/${pod}`;
    const exec = await channels(server, `${base}/exec?command=hostname&stdout=true`, ['v5.channel.k8s.io']);
    await exec.closed;
    expect(exec.text(1)).toBe(`${pod}\n`);
    const attach = await channels(server, `${base}/attach?stdin=true&stdout=true`, ['v5.channel.k8s.io']);
    attach.send(0, 'ping\n');
    await attach.waitFor(1, 'ping\n');
    attach.ws.close();
    const pf = await channels(server, `${base}/portforward?ports=8080`, ['v4.channel.k8s.io']);
    pf.send(0, 'GET / HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n');
    await pf.closed;
    expect(pf.text(0)).toContain(`Hello from ${pod} in live (port 8080)`);
    const shell = await channels(
      server,
      '/api/v1/namespaces/live/pods/debug-shell/attach?stdin=1&stdout=1&tty=1',
      ['v5.channel.k8s.io'],
    );
    shell.send(0, 'hi\r');
    await shell.waitFor(1, 'hi\r\nhi\r\n');
    shell.ws.close();
  });
});
