import { describe, expect, it } from 'vitest';
import { eventSubject, filterEvents, ManagedResolver } from '../src/index.js';
import { collect, fromChunks, runAllChunkings } from './support/chunking.js';
import { deployment, FakeCluster, list, type Obj, pod, replicaSet } from './support/kube-fixtures.js';

let seq = 0;
function coreEvent(subject: Obj | Record<string, unknown>, reason: string, message: string): Obj {
  const s = subject as Obj;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `${String(s.metadata?.name ?? 'x')}.17c3b5${++seq}`,
      namespace: 'guestbook',
      uid: `ev-${seq}`,
    },
    involvedObject: {
      apiVersion: s.apiVersion,
      kind: s.kind,
      namespace: s.metadata?.namespace,
      name: s.metadata?.name,
      uid: s.metadata?.uid,
      resourceVersion: '81250',
      fieldPath: 'spec.containers{web}',
    },
    reason,
    message,
    source: { component: 'kubelet', host: 'worker-1' },
    firstTimestamp: '2024-05-01T10:00:00Z',
    lastTimestamp: '2024-05-01T10:00:05Z',
    count: 1,
    type: reason === 'Failed' ? 'Warning' : 'Normal',
  };
}

function scene() {
  const cluster = new FakeCluster();
  const deploy = deployment('guestbook-ui');
  const rs = replicaSet('guestbook-ui-85985d4f9c', deploy);
  const stray = replicaSet('debug-shell-7c5f8', undefined);
  const web = pod('guestbook-ui-85985d4f9c-x2kqp', rs);
  const debug = pod('debug-shell-7c5f8-abcde', stray);
  cluster.add(deploy, rs, stray, web, debug);
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-1', uid: 'node-uid' } };
  cluster.add(node as Obj);
  const events = [
    coreEvent(web, 'Scheduled', 'Successfully assigned guestbook/guestbook-ui-85985d4f9c-x2kqp to worker-1'),
    coreEvent(debug, 'Pulled', 'Container image "busybox" already present on machine'),
    coreEvent(deploy, 'ScalingReplicaSet', 'Scaled up replica set guestbook-ui-85985d4f9c to 2'),
    coreEvent(node as Obj, 'NodeReady', 'Node worker-1 status is now: NodeReady'),
    coreEvent(web, 'Failed', 'Failed to pull image "gcr.io/heptio-images/ks-guestbook-demo:0.3"'),
    coreEvent(pod('already-gone', rs), 'Killing', 'Stopping container web'),
    { ...coreEvent(web, 'Odd', 'no apiVersion'), involvedObject: { kind: 'Pod', name: web.metadata.name } },
  ];
  const resolver = () => new ManagedResolver({ getObject: cluster.getObject });
  return { cluster, web, deploy, events, resolver };
}

const reasons = (items: Array<{ reason: string }>) => items.map((e) => e.reason);

describe('filterEvents', () => {
  it('keeps core Events whose involvedObject is managed, for every chunking', async () => {
    const { events, resolver } = scene();
    const input = JSON.stringify(list('EventList', events));
    const out = JSON.parse(await runAllChunkings(input, (src) => filterEvents(src, resolver())));
    expect(reasons(out.items)).toEqual(['Scheduled', 'ScalingReplicaSet', 'Failed']);
  });

  it('reads `regarding` for events.k8s.io/v1 Events', async () => {
    const { web, resolver } = scene();
    const ev = (name: string, regarding: Record<string, unknown>) => ({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace: 'guestbook' },
      regarding,
      reason: name,
      note: 'x',
      type: 'Normal',
      eventTime: null,
    });
    const items = [
      ev('Started', { apiVersion: 'v1', kind: 'Pod', namespace: 'guestbook', name: web.metadata.name }),
      ev('Other', { apiVersion: 'v1', kind: 'Pod', namespace: 'guestbook', name: 'debug-shell-7c5f8-abcde' }),
    ];
    const out = JSON.parse(
      await runAllChunkings(
        JSON.stringify({ ...list('EventList', items), apiVersion: 'events.k8s.io/v1' }),
        (src) => filterEvents(src, resolver()),
      ),
    );
    expect(reasons(out.items)).toEqual(['Started']);
    expect(eventSubject(items[0])).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: 'guestbook',
      name: web.metadata.name,
    });
  });

  it('looks up each subject and owner once per list', async () => {
    const { cluster, web, resolver } = scene();
    const many = Array.from({ length: 200 }, (_, i) => coreEvent(web, `R${i}`, 'probe'));
    const r = resolver();
    const out = JSON.parse(
      (await collect(filterEvents(fromChunks([JSON.stringify(list('EventList', many))]), r))).toString(),
    );
    expect(out.items).toHaveLength(200);
    expect(cluster.count).toBe(3); // pod, its ReplicaSet, the Deployment
  });

  it('filters event watches and Tables with full objects', async () => {
    const { events, resolver } = scene();
    const watch = events.map((e) => `${JSON.stringify({ type: 'ADDED', object: e })}\n`).join('');
    const out = await runAllChunkings(watch, (src) => filterEvents(src, resolver(), 'watch'));
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).object.reason),
    ).toEqual(['Scheduled', 'ScalingReplicaSet', 'Failed']);
    const table = {
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '1' },
      columnDefinitions: [{ name: 'Reason', type: 'string' }],
      rows: events.map((e) => ({ cells: [e.reason], object: e })),
    };
    const t = JSON.parse(
      await runAllChunkings(JSON.stringify(table), (src) => filterEvents(src, resolver())),
    );
    expect(t.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual([
      'Scheduled',
      'ScalingReplicaSet',
      'Failed',
    ]);
  });
});
