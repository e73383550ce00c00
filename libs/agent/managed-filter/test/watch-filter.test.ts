import { describe, expect, it } from 'vitest';
import { filterWatch, ManagedFilterErrorCode, ManagedResolver } from '../src/index.js';
import { collect, fromChunks, ManualSource, nextOrPending, runAllChunkings } from './support/chunking.js';
import {
  deployment,
  FakeCluster,
  type Obj,
  partial,
  pod,
  podColumns,
  replicaSet,
} from './support/kube-fixtures.js';

const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;
const bookmark = (rv: string) =>
  line('BOOKMARK', {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true' } },
  });
const errorEvent = line('ERROR', {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'too old resource version: 81234 (81299)',
  reason: 'Expired',
  code: 410,
});

function parseEvents(out: string) {
  expect(out === '' || out.endsWith('\n')).toBe(true);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { type: string; object: Obj });
}

const summary = (out: string) =>
  parseEvents(out).map(
    (e) => `${e.type} ${String(e.object.metadata?.name ?? e.object.metadata?.resourceVersion)}`,
  );

function scene() {
  const cluster = new FakeCluster();
  const deploy = deployment('guestbook-ui');
  const rs = replicaSet('guestbook-ui-85985d4f9c', deploy);
  const stray = replicaSet('debug-shell-7c5f8', undefined);
  cluster.add(deploy, rs, stray);
  const resolver = () => new ManagedResolver({ getObject: cluster.getObject });
  return { cluster, deploy, rs, stray, resolver };
}

describe('filterWatch', () => {
  it('drops events of unmanaged objects, passes BOOKMARK and ERROR, for every chunking', async () => {
    const { deploy, rs, stray, resolver } = scene();
    const managed = pod('guestbook-ui-85985d4f9c-x2kqp', rs);
    const unmanaged = pod('debug-shell-7c5f8-abcde', stray);
    const input =
      line('ADDED', managed) +
      line('ADDED', unmanaged) +
      bookmark('81300') +
      line('MODIFIED', { ...unmanaged, status: { phase: 'Failed' } }) +
      line('MODIFIED', { ...managed, status: { phase: 'Running' } }) +
      line('ADDED', deploy) +
      line('DELETED', unmanaged) +
      errorEvent +
      line('DELETED', managed);
    const out = await runAllChunkings(input, (src) => filterWatch(src, resolver()));
    expect(summary(out)).toEqual([
      'ADDED guestbook-ui-85985d4f9c-x2kqp',
      'BOOKMARK 81300',
      'MODIFIED guestbook-ui-85985d4f9c-x2kqp',
      'ADDED guestbook-ui',
      'ERROR undefined',
      'DELETED guestbook-ui-85985d4f9c-x2kqp',
    ]);
    // Kept events are forwarded byte for byte.
    expect(out.split('\n')[0]).toBe(line('ADDED', managed).trimEnd());
  });

  it('emits each kept event as soon as its line is complete', async () => {
    const { rs, stray, resolver } = scene();
    const src = new ManualSource();
    const it = filterWatch(src, resolver())[Symbol.asyncIterator]();
    const pending: { p?: Promise<IteratorResult<Buffer>> } = {};
    const first = line('ADDED', pod('a', rs));
    src.push(first.slice(0, 40));
    expect(await nextOrPending(it, pending, src)).toBe('pending');
    src.push(first.slice(40));
    const got = await nextOrPending(it, pending, src);
    expect(got).not.toBe('pending');
    expect((got as IteratorResult<Buffer>).value.toString()).toBe(first);
    // Several lines in one chunk, the last one split: the complete ones come out at once.
    src.push(line('ADDED', pod('b', stray)) + line('ADDED', pod('c', rs)) + bookmark('9').slice(0, 10));
    const c = await nextOrPending(it, pending, src);
    expect((c as IteratorResult<Buffer>).value.toString()).toContain('"name":"c"');
    expect(await nextOrPending(it, pending, src)).toBe('pending');
    src.push(bookmark('9').slice(10));
    expect((await nextOrPending(it, pending, src)) as IteratorResult<Buffer>).toMatchObject({ done: false });
    src.push(null);
    expect(await (pending.p ?? it.next())).toMatchObject({ done: true });
  });

  it('turns a shown object that stops being managed into a metadata-only DELETED', async () => {
    const { resolver } = scene();
    const tracked = pod('hooked', undefined, 'guestbook', {
      annotations: { 'argocd.argoproj.io/tracking-id': 'guestbook:/Pod:guestbook/hooked' },
    });
    const untracked = {
      ...tracked,
      metadata: { ...tracked.metadata, annotations: {}, resourceVersion: '81400' },
    };
    const input = line('ADDED', tracked) + line('MODIFIED', untracked) + line('MODIFIED', untracked);
    const events = parseEvents(await runAllChunkings(input, (src) => filterWatch(src, resolver())));
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    expect(events[1]!.object).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'hooked',
        namespace: 'guestbook',
        uid: tracked.metadata.uid,
        resourceVersion: '81400',
      },
    });
  });

  it('forwards a metadata-only DELETED for pods whose owners were deleted first', async () => {
    const { cluster, rs, stray, resolver } = scene();
    const p = pod('guestbook-ui-85985d4f9c-x2kqp', rs);
    const loose = pod('standalone', undefined);
    cluster.remove(rs); // background cascading deletion removed the owner already
    const input = line('DELETED', p) + line('DELETED', loose) + line('DELETED', pod('x', stray));
    const events = parseEvents(await runAllChunkings(input, (src) => filterWatch(src, resolver())));
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe('DELETED');
    expect(events[0]!.object.metadata).toEqual({
      name: p.metadata.name,
      namespace: 'guestbook',
      uid: p.metadata.uid,
      resourceVersion: '81250',
    });
    expect(events[0]!.object).not.toHaveProperty('spec');
    const strict = await collect(filterWatch(fromChunks([input]), resolver(), { orphanTombstones: false }));
    expect(strict.toString()).toBe('');
  });

  it('filters as=Table watch events and keeps the column headers of a dropped first event', async () => {
    const { rs, stray, resolver } = scene();
    const tableEvent = (type: string, o: Obj, columns: boolean) =>
      line(type, {
        kind: 'Table',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: '81300' },
        columnDefinitions: columns ? podColumns : null,
        rows: [{ cells: [o.metadata.name, '1/1', 'Running', '0', '1s'], object: partial(o) }],
      });
    const input =
      tableEvent('ADDED', pod('stray-1', stray), true) +
      tableEvent('ADDED', pod('web-1', rs), false) +
      tableEvent('MODIFIED', pod('web-1', rs), false) +
      tableEvent('ADDED', pod('stray-2', stray), false);
    const events = parseEvents(await runAllChunkings(input, (src) => filterWatch(src, resolver())));
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
    const [first, second] = events as unknown as Array<{
      object: { columnDefinitions: unknown; rows: Array<{ cells: string[] }> };
    }>;
    expect(first!.object.columnDefinitions).toEqual(podColumns);
    expect(first!.object.rows[0]!.cells[0]).toBe('web-1');
    expect(second!.object.columnDefinitions).toBeNull();
  });

  it('tolerates CRLF, blank lines and a last line without newline', async () => {
    const { rs, resolver } = scene();
    const a = JSON.stringify({ type: 'ADDED', object: pod('a', rs) });
    const input = `\n${a}\r\n\n  \n${a}`;
    const out = await runAllChunkings(input, (src) => filterWatch(src, resolver()));
    expect(out).toBe(`${a}\r\n${a}\n`);
  });

  it('fails on malformed events instead of forwarding them', async () => {
    const { resolver } = scene();
    for (const bad of [
      '{"type":"ADDED","object":{',
      '{"object":{}}\n',
      '{"type":"ADDED"}\n',
      '[1,2]\n',
      'garbage\n',
    ]) {
      await expect(collect(filterWatch(fromChunks([bad]), resolver())), bad).rejects.toMatchObject({
        code: ManagedFilterErrorCode.MALFORMED_RESPONSE,
      });
    }
    await expect(
      collect(
        filterWatch(fromChunks(['{"type":"ADDED",', '"x":"', 'y'.repeat(300)]), resolver(), {
          maxItemBytes: 100,
        }),
      ),
    ).rejects.toMatchObject({ code: ManagedFilterErrorCode.ITEM_TOO_LARGE });
  });
});
