import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SERVICE_ACCOUNT_USER, type FakeKubeApiServer, startFakeKubeApiServer } from '../src/index.js';
import { eventually, pod } from './kube-helpers.js';

let server: FakeKubeApiServer;

beforeAll(async () => {
  server = await startFakeKubeApiServer();
  server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h' } });
});
afterAll(async () => {
  await server?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: test convenience for JSON bodies
type Json = Record<string, any>;

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = { text };
  }
  return { status: res.status, headers: res.headers, json };
}

const cm = (name: string, data: Record<string, string> = {}, labels?: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels },
  data,
});

describe('Status objects', () => {
  it('404 NotFound with details', async () => {
    const r = await call('GET', '/api/v1/namespaces/h/configmaps/missing');
    expect(r.status).toBe(404);
    expect(r.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'configmaps "missing" not found',
      reason: 'NotFound',
      details: { name: 'missing', kind: 'configmaps' },
      code: 404,
    });
    const grouped = await call('DELETE', '/apis/apps/v1/namespaces/h/deployments/missing');
    expect(grouped.json).toMatchObject({
      message: 'deployments.apps "missing" not found',
      details: { group: 'apps' },
    });
    expect((await call('GET', '/api/v1/namespaces/h/widgets')).json).toMatchObject({
      code: 404,
      reason: 'NotFound',
    });
  });

  it('409 AlreadyExists and Conflict', async () => {
    expect((await call('POST', '/api/v1/namespaces/h/configmaps', cm('dup'))).status).toBe(201);
    const again = await call('POST', '/api/v1/namespaces/h/configmaps', cm('dup'));
    expect(again.json).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
      message: 'configmaps "dup" already exists',
    });
    const current = (await call('GET', '/api/v1/namespaces/h/configmaps/dup')).json;
    const stale = { ...current, metadata: { ...current.metadata, resourceVersion: '1' } };
    const conflict = await call('PUT', '/api/v1/namespaces/h/configmaps/dup', stale);
    expect(conflict.json).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(conflict.json.message).toContain('the object has been modified');
  });

  it('400 BadRequest, 415 UnsupportedMediaType, 405 MethodNotAllowed, 422 Invalid', async () => {
    expect((await call('POST', '/api/v1/namespaces/h/configmaps', '{not json')).json).toMatchObject({
      code: 400,
      reason: 'BadRequest',
    });
    expect((await call('GET', '/api/v1/namespaces/h/pods?fieldSelector=spec.bogus=1')).json).toMatchObject({
      code: 400,
      message: 'field label not supported: spec.bogus',
    });
    const mismatch = await call('PUT', '/api/v1/namespaces/h/configmaps/dup', cm('other'));
    expect(mismatch.json).toMatchObject({ code: 400, reason: 'BadRequest' });
    const patch = await call('PATCH', '/api/v1/namespaces/h/configmaps/dup', '{}', {
      'content-type': 'text/plain',
    });
    expect(patch.json).toMatchObject({ code: 415, reason: 'UnsupportedMediaType' });
    const proto = await call('POST', '/api/v1/namespaces/h/configmaps', 'x', {
      'content-type': 'application/vnd.kubernetes.protobuf',
    });
    expect(proto.status).toBe(415);
    expect((await call('PUT', '/api/v1/namespaces/h/configmaps', cm('x'))).json).toMatchObject({
      code: 405,
      reason: 'MethodNotAllowed',
    });
    const invalid = await call('POST', '/api/v1/namespaces/h/configmaps', cm('Not_Valid'));
    expect(invalid.json).toMatchObject({
      code: 422,
      reason: 'Invalid',
      details: { causes: [{ field: 'metadata.name' }] },
    });
    const noNs = await call('POST', '/api/v1/namespaces/nowhere/configmaps', cm('x'));
    expect(noNs.json).toMatchObject({ code: 404, message: 'namespaces "nowhere" not found' });
    const failedTest = await call(
      'PATCH',
      '/api/v1/namespaces/h/configmaps/dup',
      [{ op: 'test', path: '/data', value: { a: 'b' } }],
      {
        'content-type': 'application/json-patch+json',
      },
    );
    expect(failedTest.json).toMatchObject({ code: 422, reason: 'Invalid' });
  });
});

describe('tables and content negotiation', () => {
  const TABLE =
    'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

  it('returns a meta.k8s.io/v1 Table with PartialObjectMetadata rows by default', async () => {
    server.store.put(pod('h', 'tabled'));
    const r = await call('GET', '/api/v1/namespaces/h/pods', undefined, { accept: TABLE });
    expect(r.json.kind).toBe('Table');
    expect(r.json.apiVersion).toBe('meta.k8s.io/v1');
    expect(r.json.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(r.json.columnDefinitions.map((c: Json) => c.name)).toEqual(
      expect.arrayContaining(['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node']),
    );
    expect(r.json.columnDefinitions[0]).toMatchObject({
      name: 'Name',
      type: 'string',
      format: 'name',
      priority: 0,
    });
    const row = r.json.rows.find((x: Json) => x.cells[0] === 'tabled');
    expect(row.cells.slice(1, 4)).toEqual(['0/1', 'Running', '0']);
    expect(row.object).toMatchObject({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { name: 'tabled' },
    });
    expect(row.object.spec).toBeUndefined();
  });

  it('honours includeObject=Object and None, and single-object tables', async () => {
    const full = await call('GET', '/api/v1/namespaces/h/pods?includeObject=Object', undefined, {
      accept: TABLE,
    });
    expect(full.json.rows[0].object.kind).toBe('Pod');
    expect(full.json.rows[0].object.spec.containers).toHaveLength(1);
    const none = await call('GET', '/api/v1/namespaces/h/pods?includeObject=None', undefined, {
      accept: TABLE,
    });
    expect(none.json.rows[0].object).toBeUndefined();
    const one = await call('GET', '/apis/apps/v1/namespaces/h/deployments', undefined, { accept: TABLE });
    expect(one.json.columnDefinitions.map((c: Json) => c.name).slice(0, 5)).toEqual([
      'Name',
      'Ready',
      'Up-to-date',
      'Available',
      'Age',
    ]);
  });

  it('answers JSON, labelled as JSON, to a protobuf-preferring client that also accepts JSON', async () => {
    const r = await call('GET', '/api/v1/namespaces/h/pods/tabled', undefined, {
      accept: 'application/vnd.kubernetes.protobuf,application/json',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.json.kind).toBe('Pod');
  });

  it('serves aggregated discovery only when asked', async () => {
    const plain = await call('GET', '/apis');
    expect(plain.json.kind).toBe('APIGroupList');
    const agg = await call('GET', '/apis', undefined, {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
    });
    expect(agg.headers.get('content-type')).toBe(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    const apps = agg.json.items.find((i: Json) => i.metadata.name === 'apps');
    const deploy = apps.versions[0].resources.find((r: Json) => r.resource === 'deployments');
    expect(deploy).toMatchObject({
      scope: 'Namespaced',
      shortNames: ['deploy'],
      responseKind: { kind: 'Deployment' },
    });
    const core = (await call('GET', '/api/v1')).json;
    expect(core.resources.find((r: Json) => r.name === 'pods/log')).toMatchObject({
      kind: 'Pod',
      verbs: ['get'],
    });
    expect((await call('GET', '/version')).json.gitVersion).toMatch(/^v1\.30\./);
    const openapi = (await call('GET', '/openapi/v3')).json;
    const url = openapi.paths['apis/apps/v1'].serverRelativeURL as string;
    const gv = (await call('GET', url)).json;
    const patchOp = gv.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch;
    expect(patchOp.parameters.map((p: Json) => p.name)).toContain('fieldValidation');
  });
});

describe('CRUD semantics', () => {
  it('selectors: set-based labels, field selectors, resourceVersionMatch=Exact', async () => {
    await call('POST', '/api/v1/namespaces/h/configmaps', cm('sel-a', {}, { tier: 'web', env: 'prod' }));
    const rvAfterA = (await call('GET', '/api/v1/namespaces/h/configmaps')).json.metadata.resourceVersion;
    await call('POST', '/api/v1/namespaces/h/configmaps', cm('sel-b', {}, { tier: 'db' }));
    const names = async (q: string) =>
      (await call('GET', `/api/v1/namespaces/h/configmaps?${q}`)).json.items.map(
        (i: Json) => i.metadata.name,
      );
    expect(await names('labelSelector=tier%20in%20(web,db)')).toEqual(['sel-a', 'sel-b']);
    expect(await names('labelSelector=tier,!env')).toEqual(['sel-b']);
    expect(await names('labelSelector=tier!=web')).toEqual(['dup', 'sel-b']); // != also matches objects without the label
    expect(await names('labelSelector=tier,tier!=web')).toEqual(['sel-b']);
    expect(await names('fieldSelector=metadata.name%3Dsel-a')).toEqual(['sel-a']);
    expect(await names(`labelSelector=tier&resourceVersion=${rvAfterA}&resourceVersionMatch=Exact`)).toEqual([
      'sel-a',
    ]);
    const all = (await call('GET', '/api/v1/configmaps?labelSelector=tier')).json;
    expect(all.kind).toBe('ConfigMapList');
  });

  it('dryRun=All does not persist', async () => {
    const r = await call('POST', '/api/v1/namespaces/h/configmaps?dryRun=All', cm('dry'));
    expect(r.status).toBe(201);
    expect(r.json.metadata.uid).toBeTruthy();
    expect((await call('GET', '/api/v1/namespaces/h/configmaps/dry')).status).toBe(404);
  });

  it('status subresource: main writes keep status, /status writes only status', async () => {
    const dep = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'st' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [] } },
      },
      status: { readyReplicas: 9 },
    };
    const created = (await call('POST', '/apis/apps/v1/namespaces/h/deployments', dep)).json;
    expect(created.status).toEqual({});
    expect(created.metadata.generation).toBe(1);
    const merge = { 'content-type': 'application/merge-patch+json' };
    const s = await call(
      'PATCH',
      '/apis/apps/v1/namespaces/h/deployments/st/status',
      { status: { readyReplicas: 1 }, spec: { replicas: 7 } },
      merge,
    );
    expect(s.json.status.readyReplicas).toBe(1);
    expect(s.json.spec.replicas).toBe(1);
    const main = await call(
      'PATCH',
      '/apis/apps/v1/namespaces/h/deployments/st',
      { status: { readyReplicas: 5 }, spec: { replicas: 3 } },
      merge,
    );
    expect(main.json.status.readyReplicas).toBe(1);
    expect(main.json.metadata.generation).toBe(2);
    const scale = await call('GET', '/apis/apps/v1/namespaces/h/deployments/st/scale');
    expect(scale.json).toMatchObject({ kind: 'Scale', spec: { replicas: 3 }, status: { selector: 'a=b' } });
  });

  it('finalizers defer deletion until removed; namespace deletion cascades', async () => {
    await call('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'doomed' },
    });
    const obj = { ...cm('held'), metadata: { name: 'held', finalizers: ['example.com/hold'] } };
    await call('POST', '/api/v1/namespaces/doomed/configmaps', obj);
    const del = await call('DELETE', '/api/v1/namespaces/doomed/configmaps/held');
    expect(del.status).toBe(202);
    expect(del.json.metadata.deletionTimestamp).toBeTruthy();
    expect((await call('GET', '/api/v1/namespaces/doomed/configmaps/held')).status).toBe(200);
    await call(
      'PATCH',
      '/api/v1/namespaces/doomed/configmaps/held',
      { metadata: { finalizers: null } },
      {
        'content-type': 'application/merge-patch+json',
      },
    );
    expect((await call('GET', '/api/v1/namespaces/doomed/configmaps/held')).status).toBe(404);

    await call('POST', '/api/v1/namespaces/doomed/configmaps', cm('gone-with-ns'));
    expect((await call('DELETE', '/api/v1/namespaces/doomed')).status).toBe(200);
    expect((await call('GET', '/api/v1/namespaces/doomed/configmaps/gone-with-ns')).status).toBe(404);
  });

  it('deletecollection honours selectors', async () => {
    for (const n of ['dc-1', 'dc-2', 'dc-3'])
      await call(
        'POST',
        '/api/v1/namespaces/h/configmaps',
        cm(n, {}, { dc: n === 'dc-3' ? 'keep' : 'drop' }),
      );
    const r = await call('DELETE', '/api/v1/namespaces/h/configmaps?labelSelector=dc%3Ddrop');
    expect(r.json.kind).toBe('ConfigMapList');
    expect(r.json.items.map((i: Json) => i.metadata.name)).toEqual(['dc-1', 'dc-2']);
    expect((await call('GET', '/api/v1/namespaces/h/configmaps?labelSelector=dc')).json.items).toHaveLength(
      1,
    );
  });

  it('creating a CustomResourceDefinition serves the new type', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wd'] },
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    };
    const created = await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    expect(created.json.status.conditions.find((c: Json) => c.type === 'Established').status).toBe('True');
    const w = await call('POST', '/apis/example.com/v1/namespaces/h/widgets', {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w1' },
      spec: { size: 1 },
    });
    expect(w.status).toBe(201);
    expect((await call('GET', '/apis/example.com/v1')).json.resources[0]).toMatchObject({
      name: 'widgets',
      shortNames: ['wd'],
    });
    await call('DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com');
    expect((await call('GET', '/apis/example.com/v1/namespaces/h/widgets/w1')).status).toBe(404);
  });
});

describe('watch over HTTP', () => {
  it('streams newline-delimited events with chunked encoding, tables when asked, and 410 when too old', async () => {
    const rv = server.store.resourceVersion();
    const controller = new AbortController();
    const res = await fetch(`${server.url}/api/v1/namespaces/h/configmaps?watch=true&resourceVersion=${rv}`, {
      signal: controller.signal,
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
    });
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const reader = res.body!.getReader();
    server.store.put({ ...cm('streamed'), metadata: { name: 'streamed', namespace: 'h' } });
    server.store.put({ ...cm('streamed2'), metadata: { name: 'streamed2', namespace: 'h' } });
    let buf = '';
    while (buf.split('\n').length < 3) buf += new TextDecoder().decode((await reader.read()).value);
    const [first, second] = buf.split('\n').map((l) => (l ? (JSON.parse(l) as Json) : undefined));
    expect(first).toMatchObject({
      type: 'ADDED',
      object: { kind: 'Table', rows: [{ cells: ['streamed', 0, expect.any(String)] }] },
    });
    expect(first!.object.columnDefinitions.length).toBeGreaterThan(0);
    expect(second!.object.columnDefinitions).toEqual([]);
    controller.abort();
    await eventually(() => expect(server.activeWatches()).toBe(0));

    server.store.compact();
    const gone = await call('GET', `/api/v1/namespaces/h/configmaps?watch=true&resourceVersion=${rv}`);
    expect(gone.status).toBe(200);
    expect(JSON.parse(gone.json.text ?? JSON.stringify(gone.json))).toMatchObject({
      type: 'ERROR',
      object: { code: 410, reason: 'Expired' },
    });
  });

  it('timeoutSeconds ends the stream; a watch without resourceVersion starts with ADDED for existing objects', async () => {
    const r = await call(
      'GET',
      '/api/v1/namespaces/h/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Ddup',
    );
    const lines = String(r.json.text ?? JSON.stringify(r.json))
      .trim()
      .split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'dup' } } });
  });
});

/** Reads the first `n` watch events, then disconnects. */
async function firstEvents(path: string, n: number): Promise<Json[]> {
  const controller = new AbortController();
  const res = await fetch(`${server.url}${path}`, { signal: controller.signal });
  const reader = res.body!.getReader();
  let buf = '';
  while (buf.split('\n').length <= n) buf += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  return buf
    .split('\n')
    .slice(0, n)
    .map((l) => JSON.parse(l) as Json);
}

describe('watch variants', () => {
  it('legacy /watch/ path, single-object watch and sendInitialEvents with the end bookmark', async () => {
    const legacy = await firstEvents(
      '/api/v1/watch/namespaces/h/configmaps?fieldSelector=metadata.name%3Ddup',
      1,
    );
    expect(legacy[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'dup' } } });
    const single = await firstEvents('/api/v1/namespaces/h/configmaps/dup?watch=true', 1);
    expect(single[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'dup' } } });
    const initial = await firstEvents(
      '/api/v1/namespaces/h/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&fieldSelector=metadata.name%3Ddup',
      2,
    );
    expect(initial.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
    expect(initial[1]!.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    await eventually(() => expect(server.activeWatches()).toBe(0));
  });

  it('enforces verbs per resource', async () => {
    expect((await call('GET', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews')).status).toBe(405);
    expect((await call('DELETE', '/api/v1/namespaces')).status).toBe(405);
    const review = await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: 'get', resource: 'pods' } },
    });
    expect(review.json.status.allowed).toBe(true);
  });
});

describe('faults, latency and auth', () => {
  it('injects status codes, hangs and latency', async () => {
    server.setFault((req) => (req.path.endsWith('/configmaps/dup') ? { status: 500 } : undefined));
    expect((await call('GET', '/api/v1/namespaces/h/configmaps/dup')).json).toMatchObject({
      code: 500,
      reason: 'InternalError',
    });
    server.setFault((req) => (req.path.endsWith('/configmaps/dup') ? { hang: true } : undefined));
    await expect(
      fetch(`${server.url}/api/v1/namespaces/h/configmaps/dup`, { signal: AbortSignal.timeout(200) }),
    ).rejects.toThrow();
    server.setFault((req) => (req.path.endsWith('/configmaps/dup') ? { destroy: true } : undefined));
    await expect(fetch(`${server.url}/api/v1/namespaces/h/configmaps/dup`)).rejects.toThrow();
    server.setFault(undefined);
    // Latency holds a request back: one sent under it is overtaken by one sent after it was
    // received and the latency lifted (order, not a duration).
    server.clearRequests();
    server.setLatency(1_500);
    const order: string[] = [];
    const slow = call('GET', '/api/v1/namespaces/h/configmaps/dup?slow=1').then((r) => {
      order.push('slow');
      return r;
    });
    await eventually(() => expect(server.requests.map((r) => r.query.slow)).toEqual(['1']));
    server.setLatency(0);
    expect((await call('GET', '/api/v1/namespaces/h/configmaps/dup')).status).toBe(200);
    order.push('fast');
    expect((await slow).status).toBe(200);
    expect(order).toEqual(['fast', 'slow']);
  });

  it('records requests including headers', async () => {
    server.clearRequests();
    await call('GET', '/api/v1/namespaces/h/configmaps?limit=1', undefined, { 'x-probe': 'yes' });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      method: 'GET',
      path: '/api/v1/namespaces/h/configmaps',
      query: { limit: '1' },
      status: 200,
    });
    expect(server.requests[0]!.headers['x-probe']).toBe('yes');
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('requires the bearer token when configured', async () => {
    const secured = await startFakeKubeApiServer({ token: 'let-me-in' });
    try {
      const anon = await fetch(`${secured.url}/api/v1/namespaces`);
      expect(anon.status).toBe(401);
      expect(await anon.json()).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
      const ok = await fetch(`${secured.url}/api/v1/namespaces`, {
        headers: { authorization: 'Bearer let-me-in' },
      });
      expect(ok.status).toBe(200);
      expect(secured.requests.at(-1)?.user).toBe(AGENT_SERVICE_ACCOUNT_USER);
      expect(secured.kubeconfig()).toContain('token: let-me-in');
    } finally {
      await secured.close();
    }
  });
});
