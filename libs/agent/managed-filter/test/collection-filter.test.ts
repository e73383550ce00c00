import { describe, expect, it } from 'vitest';
import {
  filterList,
  filterTable,
  ManagedFilterError,
  ManagedFilterErrorCode,
  ManagedResolver,
} from '../src/index.js';
import { collect, fromChunks, ManualSource, nextOrPending, runAllChunkings } from './support/chunking.js';
import {
  deployment,
  FakeCluster,
  list,
  names,
  type Obj,
  pod,
  replicaSet,
  table,
  trackingId,
} from './support/kube-fixtures.js';

/** A realistic namespace: a tracked Deployment's pods, a stray pod, a tracked ConfigMap-ish pod, an orphan. */
function scene() {
  const cluster = new FakeCluster();
  const deploy = deployment('guestbook-ui');
  const rsNew = replicaSet('guestbook-ui-85985d4f9c', deploy);
  const rsOld = replicaSet('guestbook-ui-6b9f6c7d5d', deploy);
  const stray = deployment('debug-shell', 'guestbook', { tracked: false });
  const strayRs = replicaSet('debug-shell-7c5f8', stray);
  const goneRs = replicaSet('guestbook-ui-0000000000', deploy);
  cluster.add(deploy, rsNew, rsOld, stray, strayRs);
  const pods = [
    pod('guestbook-ui-85985d4f9c-x2kqp', rsNew),
    pod('debug-shell-7c5f8-abcde', strayRs),
    pod('guestbook-ui-6b9f6c7d5d-zzt4m', rsOld),
    pod('standalone', undefined),
    pod('hooked', undefined, 'guestbook', {
      annotations: {
        'argocd.argoproj.io/tracking-id': trackingId('guestbook', '', 'Pod', 'guestbook', 'hooked'),
      },
    }),
    pod('orphaned', goneRs),
    pod('guestbook-ui-85985d4f9c-9wq7h', rsNew),
  ];
  const resolver = () => new ManagedResolver({ getObject: cluster.getObject });
  return { cluster, pods, resolver };
}

const expectedNames = [
  'guestbook-ui-85985d4f9c-x2kqp',
  'guestbook-ui-6b9f6c7d5d-zzt4m',
  'hooked',
  'guestbook-ui-85985d4f9c-9wq7h',
];

describe('filterList', () => {
  it('keeps only managed items and the list metadata, for every chunking', async () => {
    const { pods, resolver } = scene();
    const input = JSON.stringify(list('PodList', pods, { remainingItemCount: 42 }));
    const out = await runAllChunkings(input, (src) => filterList(src, resolver()));
    const parsed = JSON.parse(out);
    expect(names(parsed.items)).toEqual(expectedNames);
    expect(parsed.kind).toBe('PodList');
    expect(parsed.metadata.resourceVersion).toBe('81299');
    expect(parsed.metadata.continue).toBe('eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6ODEyOTl9');
    // How many objects remain (managed or not) is not ours to tell.
    expect(parsed.metadata).not.toHaveProperty('remainingItemCount');
    // Kept items are byte-identical to the input's.
    expect(parsed.items).toEqual(pods.filter((p) => expectedNames.includes(String(p.metadata.name))));
  });

  it('handles pretty-printed JSON, items before metadata, and keeps everything else verbatim', async () => {
    const { pods, resolver } = scene();
    const doc = { items: pods, kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '5' } };
    const input = `\n  ${JSON.stringify(doc, null, 2)}\n`;
    const out = await runAllChunkings(input, (src) => filterList(src, resolver()));
    const parsed = JSON.parse(out);
    expect(names(parsed.items)).toEqual(expectedNames);
    expect(out.startsWith('\n  {\n  "items": [')).toBe(true);
    expect(out.endsWith('"resourceVersion": "5"\n  }\n}\n')).toBe(true);
  });

  it('is not fooled by brackets, quotes, escapes, nested "items" or multi-byte text inside strings', async () => {
    const { pods, resolver } = scene();
    const tricky = (p: Obj) => {
      p.metadata.annotations = {
        ...(p.metadata.annotations as object),
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
          items: [{ a: ']}' }],
          x: '\\"',
        }),
        'example.com/odd': '],"items":[{"metadata":{}}],{\\',
        'example.com/unicode': '\u005d \u2028 日本語 — 🚀 \\u005d',
      };
      (p as Record<string, unknown>).data = { items: ['not', 'the', 'list'], nested: [[[], {}], '[', '{'] };
      return p;
    };
    const input = JSON.stringify(list('PodList', pods.map(tricky)));
    const out = await runAllChunkings(input, (src) => filterList(src, resolver()));
    const parsed = JSON.parse(out);
    expect(names(parsed.items)).toEqual(expectedNames);
    expect(parsed.items[0].metadata.annotations['example.com/unicode']).toBe('] \u2028 日本語 — 🚀 \\u005d');
  });

  it('recognises an escaped "items" key', async () => {
    const { pods, resolver } = scene();
    const input = `{"kind":"PodList","it\\u0065ms":${JSON.stringify(pods)}}`;
    const out = JSON.parse((await collect(filterList(fromChunks([input]), resolver()))).toString());
    expect(names(out.items)).toEqual(expectedNames);
  });

  it('handles empty, null and fully filtered item arrays', async () => {
    const { pods, resolver } = scene();
    for (const [input, want] of [
      ['{"kind":"PodList","items":[]}', '{"kind":"PodList","items":[]}'],
      ['{"kind":"PodList","items":[ ]}', '{"kind":"PodList","items":[]}'],
      ['{"kind":"PodList","items":null}', '{"kind":"PodList","items":null}'],
      [`{"kind":"PodList","items":${JSON.stringify([pods[1], pods[3]])}}`, '{"kind":"PodList","items":[]}'],
    ] as const) {
      expect(await runAllChunkings(input, (src) => filterList(src, resolver()))).toBe(want);
    }
  });

  it('passes a Status error body through unchanged', async () => {
    const { resolver } = scene();
    const status =
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden","reason":"Forbidden","details":{"kind":"pods"},"code":403}';
    expect(await runAllChunkings(status, (src) => filterList(src, resolver()))).toBe(status);
  });

  it('looks up each distinct owner once per list', async () => {
    const cluster = new FakeCluster();
    const deploy = deployment('guestbook-ui');
    const rss = Array.from({ length: 5 }, (_, i) => replicaSet(`guestbook-ui-5d8f7c${i}`, deploy));
    cluster.add(deploy, ...rss);
    const pods = Array.from({ length: 500 }, (_, i) => pod(`guestbook-ui-${i}`, rss[i % 5]!));
    const r = new ManagedResolver({ getObject: cluster.getObject });
    const out = await collect(filterList(fromChunks([JSON.stringify(list('PodList', pods))]), r));
    expect(JSON.parse(out.toString()).items).toHaveLength(500);
    expect(cluster.count).toBe(6);
  });

  it('emits kept items before the upstream body has ended', async () => {
    const { pods, resolver } = scene();
    const src = new ManualSource();
    const it = filterList(src, resolver(), { flushBytes: 1 })[Symbol.asyncIterator]();
    const pending: { p?: Promise<IteratorResult<Buffer>> } = {};
    src.push(`{"kind":"PodList","items":[${JSON.stringify(pods[0])},`);
    let got = '';
    for (
      let r = await nextOrPending(it, pending, src);
      r !== 'pending';
      r = await nextOrPending(it, pending, src)
    ) {
      got += (r as IteratorResult<Buffer>).value?.toString() ?? '';
    }
    expect(got).toContain('guestbook-ui-85985d4f9c-x2kqp');
    src.push(`${JSON.stringify(pods[1])}]}`);
    src.push(null);
    for (let r = await (pending.p ?? it.next()); !r.done; r = await it.next()) got += r.value.toString();
    expect(JSON.parse(got).items).toHaveLength(1);
  });

  it('refuses malformed or unexpected bodies instead of passing them through', async () => {
    const { pods, resolver } = scene();
    const cases: Array<[string, string]> = [
      ['', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['   ', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['[{"metadata":{}}]', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":1}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":1}]} {"items":[]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":{"metadata":{}}}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":"x"}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":1]}}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":1},,{}]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":1},]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[,]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":tru}]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      ['{"kind":"PodList","items":[{"a":"unterminated}]}', ManagedFilterErrorCode.MALFORMED_RESPONSE],
      [`{"items":[${JSON.stringify(pods[0])}]}`, 'fits'],
    ];
    for (const [input, code] of cases) {
      const run = collect(filterList(fromChunks([input]), resolver(), { maxItemBytes: 4096 }));
      if (code === 'fits') {
        await expect(run).resolves.toBeInstanceOf(Buffer);
        continue;
      }
      await expect(run, input).rejects.toMatchObject({ code });
    }
    const big = `{"items":[{"metadata":{"name":"${'x'.repeat(5000)}"}}]}`;
    for (const chunks of [[big], big.match(/.{1,100}/g)!]) {
      const err = await collect(filterList(fromChunks(chunks), resolver(), { maxItemBytes: 4096 })).catch(
        (e) => e,
      );
      expect(err).toBeInstanceOf(ManagedFilterError);
      expect(err.code).toBe(ManagedFilterErrorCode.ITEM_TOO_LARGE);
      expect(err.httpStatus).toBe(502);
    }
  });
});

describe('filterTable', () => {
  it('keeps rows whose PartialObjectMetadata is managed, for every chunking', async () => {
    const { pods, resolver } = scene();
    const input = JSON.stringify(table(pods));
    const out = await runAllChunkings(input, (src) => filterTable(src, resolver()));
    const parsed = JSON.parse(out);
    expect(parsed.kind).toBe('Table');
    expect(parsed.columnDefinitions).toHaveLength(5);
    expect(parsed.rows.map((r: { cells: string[] }) => r.cells[0])).toEqual(expectedNames);
    expect(names(parsed.rows)).toEqual(expectedNames);
  });

  it('drops rows without an object (includeObject=None) rather than guessing', async () => {
    const { pods, resolver } = scene();
    const t = table(pods);
    for (const row of t.rows) delete (row as { object?: unknown }).object;
    const parsed = JSON.parse(
      (await collect(filterTable(fromChunks([JSON.stringify(t)]), resolver()))).toString(),
    );
    expect(parsed.rows).toEqual([]);
  });

  it('filters whichever shape arrives: a Table through filterList, a List through filterTable', async () => {
    const { pods, resolver } = scene();
    const t = JSON.parse(
      (await collect(filterList(fromChunks([JSON.stringify(table(pods))]), resolver()))).toString(),
    );
    expect(names(t.rows)).toEqual(expectedNames);
    const l = JSON.parse(
      (
        await collect(filterTable(fromChunks([JSON.stringify(list('PodList', pods))]), resolver()))
      ).toString(),
    );
    expect(names(l.items)).toEqual(expectedNames);
  });
});
