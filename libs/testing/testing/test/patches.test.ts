import { describe, expect, it } from 'vitest';
import { applyJsonPatch, PatchApplyError } from '../src/kube/json-patch.js';
import { recordUpdate, serverSideApply } from '../src/kube/managed-fields.js';
import { applyMergePatch, strategicMerge } from '../src/kube/merge-patch.js';
import { matchesLabels, parseLabelSelector } from '../src/kube/selectors.js';
import type { KubeObject } from '../src/kube/types.js';

describe('JSON patch (RFC 6902)', () => {
  const doc = { a: { b: [1, 2, 3] }, 'x/y': 1, 't~': 2 };
  it('supports all operations and pointer escaping', () => {
    expect(
      applyJsonPatch(doc, [
        { op: 'add', path: '/a/b/-', value: 4 },
        { op: 'remove', path: '/a/b/0' },
        { op: 'replace', path: '/x~1y', value: 9 },
        { op: 'copy', from: '/t~0', path: '/c' },
        { op: 'move', from: '/c', path: '/d' },
        { op: 'test', path: '/d', value: 2 },
      ]),
    ).toEqual({ a: { b: [2, 3, 4] }, 'x/y': 9, 't~': 2, d: 2 });
    expect(doc.a.b).toEqual([1, 2, 3]);
  });
  it('fails on missing paths and failed tests', () => {
    expect(() => applyJsonPatch(doc, [{ op: 'replace', path: '/nope', value: 1 }])).toThrow(PatchApplyError);
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/x~1y', value: 2 }])).toThrow(PatchApplyError);
  });
});

describe('merge patches', () => {
  it('RFC 7386: null deletes, arrays replace', () => {
    expect(
      applyMergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { a: null, b: { c: null, e: 4 }, l: [3] }),
    ).toEqual({
      b: { d: 3, e: 4 },
      l: [3],
    });
  });
  it('strategic: merge by key, $patch delete/replace, $setElementOrder, primitive finalizers', () => {
    const pod = {
      metadata: { finalizers: ['a'] },
      spec: {
        containers: [
          { name: 'web', image: 'nginx:1', env: [{ name: 'A', value: '1' }], ports: [{ containerPort: 80 }] },
          { name: 'log', image: 'fluent:1' },
        ],
        volumes: [{ name: 'v1', emptyDir: {} }],
      },
    };
    const out = strategicMerge(pod, {
      metadata: { finalizers: ['b'] },
      spec: {
        containers: [
          { name: 'web', env: [{ name: 'B', value: '2' }], ports: [{ containerPort: 443 }] },
          { name: 'log', $patch: 'delete' },
        ],
        volumes: [{ $patch: 'replace' }, { name: 'v2', emptyDir: {} }],
        '$setElementOrder/containers': [{ name: 'web' }],
      },
    } as unknown as Record<string, unknown>) as typeof pod;
    expect(out.metadata.finalizers).toEqual(['a', 'b']);
    expect(out.spec.containers).toEqual([
      {
        name: 'web',
        image: 'nginx:1',
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
        ports: [{ containerPort: 80 }, { containerPort: 443 }],
      },
    ]);
    expect(out.spec.volumes).toEqual([{ name: 'v2', emptyDir: {} }]);
  });
});

describe('managed fields', () => {
  const base = (labels: Record<string, string>, replicas: number): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', namespace: 'n', labels },
    spec: { replicas, template: { spec: { containers: [{ name: 'c', image: 'i:1' }] } } },
  });
  const opts = { manager: 'ci', force: false, apiVersion: 'apps/v1' };

  it('records ownership, shares equal values and reports conflicts', () => {
    const created = serverSideApply(undefined, base({ a: '1' }, 1), opts);
    expect(created.metadata.managedFields?.[0]?.fieldsV1).toMatchObject({
      'f:metadata': { 'f:labels': { 'f:a': {} } },
      'f:spec': {
        'f:replicas': {},
        'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {} } } } },
      },
    });
    const edited = recordUpdate(
      created,
      { ...created, spec: { ...(created.spec as object), replicas: 4 } },
      { manager: 'hpa', apiVersion: 'apps/v1' },
    );
    expect(edited.metadata.managedFields?.map((m) => m.manager)).toEqual(['ci', 'hpa']);
    expect(() => serverSideApply(edited, base({ a: '1' }, 1), opts)).toThrow(
      /conflict with "hpa" using apps\/v1: \.spec\.replicas/,
    );
    // Applying the live value is shared ownership, not a conflict.
    expect(() => serverSideApply(edited, base({ a: '1' }, 4), opts)).not.toThrow();
    const forced = serverSideApply(edited, base({ a: '1' }, 1), { ...opts, force: true });
    expect((forced.spec as { replicas: number }).replicas).toBe(1);
    expect(forced.metadata.managedFields?.map((m) => m.manager)).toEqual(['ci']);
  });

  it('removes fields the manager stopped applying unless someone else owns them', () => {
    const first = serverSideApply(undefined, base({ a: '1', b: '2' }, 1), opts);
    const other = serverSideApply(
      first,
      { ...base({ b: '2' }, 1), spec: undefined } as unknown as KubeObject,
      { ...opts, manager: 'other' },
    );
    const next = serverSideApply(other, base({}, 1), opts);
    expect(next.metadata.labels).toEqual({ b: '2' });
  });
});

describe('label selectors', () => {
  it('parses equality, set and existence requirements', () => {
    const sel = parseLabelSelector('app in (a, b),tier!=db,env,!legacy,team==x');
    expect(matchesLabels(sel, { app: 'a', env: 'p', team: 'x' })).toBe(true);
    expect(matchesLabels(sel, { app: 'a', env: 'p', team: 'x', legacy: '1' })).toBe(false);
    expect(matchesLabels(sel, { app: 'c', env: 'p', team: 'x' })).toBe(false);
    expect(() => parseLabelSelector('a in (x')).toThrow();
  });
});
