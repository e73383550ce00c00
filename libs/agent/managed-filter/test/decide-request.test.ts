import { describe, expect, it } from 'vitest';
import {
  type DecideOptions,
  decideRequest,
  type ForwardDecision,
  ManagedFilterError,
  ManagedFilterErrorCode,
  ManagedResolver,
  parseKubePath,
  type RejectDecision,
  responseFilterFor,
  statusFromError,
  statusObject,
  type TargetRef,
} from '../src/index.js';
import { collect, fromChunks } from './support/chunking.js';
import { deployment, FakeCluster, type Obj, pod, replicaSet, trackingId } from './support/kube-fixtures.js';

const NS = '/api/v1/namespaces/guestbook';
const APPS = '/apis/apps/v1/namespaces/guestbook';

function scene() {
  const cluster = new FakeCluster();
  const deploy = deployment('guestbook-ui');
  const stray = deployment('debug-shell', 'guestbook', { tracked: false });
  const rs = replicaSet('guestbook-ui-85985d4f9c', deploy);
  const web = pod('web-0', rs);
  const debug = pod('debug-0', undefined);
  cluster.add(deploy, stray, rs, web, debug);
  const byPath = new Map<string, Obj>([
    [`${APPS}/deployments/guestbook-ui`, deploy],
    [`${APPS}/deployments/debug-shell`, stray],
    [`${NS}/pods/web-0`, web],
    [`${NS}/pods/debug-0`, debug],
    [
      `${NS}/events/web-0.17c3b5`,
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'web-0.17c3b5', namespace: 'guestbook' },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'guestbook', name: 'web-0' },
      },
    ],
    [
      `${NS}/events/debug-0.17c3b5`,
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'debug-0.17c3b5', namespace: 'guestbook' },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'guestbook', name: 'debug-0' },
      },
    ],
  ]);
  const targets: TargetRef[] = [];
  const resolver = new ManagedResolver({ getObject: cluster.getObject });
  const decide = (method: string, path: string, extra: Partial<DecideOptions> = {}) =>
    decideRequest(parseKubePath(method, path), {
      resolver,
      getTarget: async (t) => {
        targets.push(t);
        return structuredClone(byPath.get(t.path));
      },
      ...extra,
    });
  return { decide, targets, resolver, deploy };
}

const tracked = (name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name,
    namespace: 'guestbook',
    annotations: {
      'argocd.argoproj.io/tracking-id': trackingId('guestbook', '', 'ConfigMap', 'guestbook', name),
    },
  },
  data: { key: 'value' },
});
const untracked = (name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'guestbook' },
});

const notManaged = (status = 404) =>
  expect.objectContaining({ action: 'reject', status, message: 'resource not managed by app' });
const fwd = (filter: string, watch = false) => expect.objectContaining({ action: 'forward', filter, watch });

describe('decideRequest: reads', () => {
  it('discovery always passes; writes to discovery do not', async () => {
    const { decide } = scene();
    for (const p of [
      '/version',
      '/api',
      '/apis',
      '/api/v1',
      '/apis/apps/v1',
      '/openapi/v3/apis/apps/v1?hash=AB',
    ]) {
      expect(await decide('GET', p)).toEqual({ action: 'forward', filter: 'none', watch: false, path: p });
    }
    expect(await decide('POST', '/api')).toMatchObject({
      action: 'reject',
      status: 403,
      reason: 'Forbidden',
    });
  });

  it('lists and watches pass with the matching response filter', async () => {
    const { decide, targets } = scene();
    expect(await decide('GET', `${NS}/pods?limit=500`)).toEqual({
      action: 'forward',
      filter: 'list',
      watch: false,
      path: `${NS}/pods?limit=500`,
    });
    expect(
      await decide('GET', `${NS}/pods`, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' }),
    ).toEqual(fwd('table'));
    expect(await decide('GET', `${NS}/pods?watch=true&resourceVersion=81299`)).toEqual(fwd('watch', true));
    expect(await decide('GET', '/apis/apps/v1/watch/deployments')).toEqual(fwd('watch', true));
    expect(await decide('GET', `${NS}/events`)).toEqual(fwd('events'));
    expect(await decide('GET', '/apis/events.k8s.io/v1/events?watch=1')).toEqual(fwd('events', true));
    expect(targets).toHaveLength(0);
  });

  it('asks for the row objects Table filtering needs', async () => {
    const { decide } = scene();
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
    const ev = (await decide('GET', `${NS}/events?limit=500`, { accept: table })) as ForwardDecision;
    expect(ev.path).toBe(`${NS}/events?limit=500&includeObject=Object`);
    const none = (await decide('GET', `${NS}/pods?includeObject=None`, { accept: table })) as ForwardDecision;
    expect(none.path).toBe(`${NS}/pods?includeObject=Metadata`);
    const plain = (await decide('GET', `${NS}/pods?includeObject=None`)) as ForwardDecision;
    expect(plain.path).toBe(`${NS}/pods?includeObject=None`);
  });

  it('named GETs pass only for managed objects', async () => {
    const { decide, targets } = scene();
    expect(await decide('GET', `${APPS}/deployments/guestbook-ui`)).toEqual(fwd('none'));
    expect(await decide('GET', `${NS}/pods/web-0`)).toEqual(fwd('none')); // through its owners
    const rejected = (await decide('GET', `${APPS}/deployments/debug-shell`)) as RejectDecision;
    expect(rejected).toEqual({
      action: 'reject',
      status: 404,
      reason: 'NotFound',
      message: 'resource not managed by app',
      details: { name: 'debug-shell', group: 'apps', kind: 'deployments' },
    });
    expect(statusObject(rejected.status, rejected.reason, rejected.message, rejected.details)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'resource not managed by app',
      reason: 'NotFound',
      details: { name: 'debug-shell', group: 'apps', kind: 'deployments' },
      code: 404,
    });
    // A missing object is the cluster's own 404.
    expect(await decide('GET', `${NS}/pods/nope`)).toEqual(fwd('none'));
    expect(targets.map((t) => t.path)).toContain(`${NS}/pods/nope`);
  });

  it('subresources follow their parent; others are not exposed', async () => {
    const { decide, targets } = scene();
    expect(await decide('GET', `${NS}/pods/web-0/log?follow=true&container=web`)).toEqual(fwd('none'));
    expect(targets.at(-1)?.path).toBe(`${NS}/pods/web-0`);
    expect(await decide('GET', `${NS}/pods/debug-0/log`)).toEqual(notManaged());
    expect(await decide('PUT', `${APPS}/deployments/guestbook-ui/scale`, { bodyObject: {} })).toEqual(
      fwd('none'),
    );
    expect(await decide('PATCH', `${APPS}/deployments/debug-shell/status`)).toEqual(notManaged());
    expect(await decide('POST', `${NS}/pods/web-0/eviction`, { bodyObject: {} })).toEqual(fwd('none'));
    expect(await decide('POST', `${NS}/pods/debug-0/eviction`, { bodyObject: {} })).toEqual(notManaged());
    for (const sub of ['exec', 'attach', 'portforward', 'proxy', 'token', 'binding']) {
      expect(await decide('POST', `${NS}/pods/web-0/${sub}`)).toMatchObject({
        action: 'reject',
        status: 403,
      });
    }
  });

  it('named Events are visible when their subject is', async () => {
    const { decide } = scene();
    expect(await decide('GET', `${NS}/events/web-0.17c3b5`)).toEqual(fwd('none'));
    expect(await decide('GET', `${NS}/events/debug-0.17c3b5`)).toEqual(notManaged());
  });
});

describe('decideRequest: writes', () => {
  it('create needs tracking on the submitted object', async () => {
    const { decide } = scene();
    expect(await decide('POST', `${NS}/configmaps`, { bodyObject: tracked('cfg') })).toEqual(fwd('none'));
    expect(await decide('POST', `${NS}/configmaps`, { bodyObject: untracked('cfg') })).toEqual(
      notManaged(403),
    );
    expect(await decide('POST', `${NS}/configmaps`)).toMatchObject({
      action: 'reject',
      status: 400,
      reason: 'BadRequest',
    });
    expect(await decide('POST', `${NS}/configmaps`, { bodyObject: [tracked('cfg')] })).toMatchObject({
      status: 400,
    });
  });

  it('create follows the active tracking method', async () => {
    const { decide, resolver } = scene();
    resolver.setTracking({ method: 'label', instanceLabelKey: 'argocd.example.com/app' });
    const labelled = {
      ...untracked('cfg'),
      metadata: { name: 'cfg', labels: { 'argocd.example.com/app': 'guestbook' } },
    };
    expect(await decide('POST', `${NS}/configmaps`, { bodyObject: labelled })).toEqual(fwd('none'));
    expect(await decide('POST', `${NS}/configmaps`, { bodyObject: tracked('cfg') })).toEqual(notManaged(403));
  });

  it('update, patch and delete check the current object first', async () => {
    const { decide } = scene();
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      expect(await decide(method, `${APPS}/deployments/guestbook-ui`, { bodyObject: {} }), method).toEqual(
        fwd('none'),
      );
      expect(await decide(method, `${APPS}/deployments/debug-shell`, { bodyObject: {} }), method).toEqual(
        notManaged(),
      );
      expect(await decide(method, `${NS}/pods/web-0`, { bodyObject: {} }), method).toEqual(fwd('none'));
    }
    // Even a body that adds tracking cannot adopt an unmanaged object.
    expect(
      await decide('PUT', `${APPS}/deployments/debug-shell`, { bodyObject: tracked('debug-shell') }),
    ).toEqual(notManaged());
  });

  it('writes to a missing object: delete/patch get the cluster 404, PUT and server-side apply must carry tracking', async () => {
    const { decide } = scene();
    expect(await decide('DELETE', `${NS}/configmaps/nope`)).toEqual(fwd('none'));
    expect(
      await decide('PATCH', `${NS}/configmaps/nope`, { contentType: 'application/merge-patch+json' }),
    ).toEqual(fwd('none'));
    const apply = { contentType: 'application/apply-patch+yaml' };
    expect(
      await decide('PATCH', `${NS}/configmaps/nope?fieldManager=kubectl`, {
        ...apply,
        bodyObject: tracked('nope'),
      }),
    ).toEqual(fwd('none'));
    expect(
      await decide('PATCH', `${NS}/configmaps/nope?fieldManager=kubectl`, {
        ...apply,
        bodyObject: untracked('nope'),
      }),
    ).toEqual(notManaged(403));
    expect(await decide('PATCH', `${NS}/configmaps/nope`, apply)).toMatchObject({ status: 400 });
    expect(await decide('PUT', `${NS}/configmaps/nope`, { bodyObject: tracked('nope') })).toEqual(
      fwd('none'),
    );
    expect(await decide('PUT', `${NS}/configmaps/nope`, { bodyObject: untracked('nope') })).toEqual(
      notManaged(403),
    );
  });

  it('deletecollection is refused unless filtering is off', async () => {
    const { decide } = scene();
    expect(await decide('DELETE', `${NS}/pods?labelSelector=app%3Dguestbook-ui`)).toMatchObject({
      action: 'reject',
      status: 403,
      reason: 'Forbidden',
    });
    expect(await decide('DELETE', `${NS}/pods`, { enabled: false })).toEqual(fwd('none'));
    expect(await decide('GET', `${APPS}/deployments/debug-shell`, { enabled: false })).toEqual(fwd('none'));
    expect(await decide('GET', `${NS}/pods?watch=true`, { enabled: false })).toEqual(fwd('none', true));
  });
});

describe('responseFilterFor and Status helpers', () => {
  it('picks the filter the decision names', async () => {
    const { decide, resolver, deploy } = scene();
    const body = JSON.stringify({
      kind: 'DeploymentList',
      items: [deploy, deployment('x', 'guestbook', { tracked: false })],
    });
    const listDecision = (await decide('GET', `${APPS}/deployments`)) as ForwardDecision;
    const filter = responseFilterFor(listDecision, resolver)!;
    expect(JSON.parse((await collect(filter(fromChunks([body])))).toString()).items).toHaveLength(1);
    const watch = responseFilterFor(
      (await decide('GET', `${APPS}/deployments?watch=1`)) as ForwardDecision,
      resolver,
    )!;
    const line = `${JSON.stringify({ type: 'ADDED', object: deploy })}\n`;
    expect((await collect(watch(fromChunks([line])))).toString()).toBe(line);
    expect(responseFilterFor((await decide('GET', `${NS}/events`)) as ForwardDecision, resolver)).toBeTypeOf(
      'function',
    );
    expect(responseFilterFor((await decide('GET', '/api')) as ForwardDecision, resolver)).toBeUndefined();
  });

  it('maps errors to Status objects', () => {
    let err: unknown;
    try {
      parseKubePath('GET', '/api/v1/namespaces/guestbook/pods/%2e%2e');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ManagedFilterError);
    expect((err as ManagedFilterError).code).toBe(ManagedFilterErrorCode.INVALID_PATH);
    expect(statusFromError(err)).toMatchObject({
      kind: 'Status',
      code: 400,
      reason: 'BadRequest',
      status: 'Failure',
    });
    expect(statusFromError(new Error('boom'))).toMatchObject({
      code: 500,
      reason: 'InternalError',
      message: 'boom',
    });
    expect(statusObject(403, 'Forbidden', 'no')).not.toHaveProperty('details');
  });
});
