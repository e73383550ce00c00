import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  AGENT_SERVICE_ACCOUNT_USER,
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
  startFakeKubeApiServer,
} from '../src/index.js';

const TOKEN = 'agent-sa-token';
const SA = AGENT_SERVICE_ACCOUNT_USER;

let server: FakeKubeApiServer;
let lenient: FakeKubeApiServer;

async function start(opts: FakeKubeApiServerOptions): Promise<FakeKubeApiServer> {
  const s = await startFakeKubeApiServer({ token: TOKEN, ...opts });
  s.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h' } });
  s.store.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'h' }, spec: {} });
  s.addCustomResource({ group: 'example.com', version: 'v1', kind: 'Widget' });
  return s;
}

beforeAll(async () => {
  server = await start({});
  lenient = await start({ strict: false });
});
afterAll(async () => {
  await server?.close();
  await lenient?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: test convenience for JSON bodies
type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; on?: FakeKubeApiServer } = {},
) {
  const res = await fetch(`${(opts.on ?? server).url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    ...(opts.body === undefined
      ? {}
      : { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = { text };
  }
  return { status: res.status, contentType: res.headers.get('content-type'), text, json };
}

describe('Impersonate-* headers', () => {
  it('are refused with 403 naming what may not be impersonated, user by user and header by header', async () => {
    const cases: [Record<string, string>, string][] = [
      [
        { 'impersonate-user': 'alice' },
        `users "alice" is forbidden: User "${SA}" cannot impersonate resource "users" in API group "" at the cluster scope`,
      ],
      [
        { 'impersonate-user': 'system:serviceaccount:kube-system:admin' },
        `serviceaccounts "admin" is forbidden: User "${SA}" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"`,
      ],
      [
        { 'impersonate-user': 'alice', 'impersonate-group': 'system:masters' },
        `users "alice" is forbidden: User "${SA}" cannot impersonate resource "users" in API group "" at the cluster scope`,
      ],
      [
        { 'impersonate-user': 'alice', 'impersonate-extra-scopes': 'view' },
        `users "alice" is forbidden: User "${SA}" cannot impersonate resource "users" in API group "" at the cluster scope`,
      ],
    ];
    for (const [headers, message] of cases) {
      const r = await call('GET', '/api/v1/namespaces/h/pods', { headers });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.json).toMatchObject({
        kind: 'Status',
        status: 'Failure',
        reason: 'Forbidden',
        code: 403,
        message,
      });
    }
    // Discovery is guarded too: impersonation is decided before routing.
    expect((await call('GET', '/api', { headers: { 'impersonate-user': 'alice' } })).status).toBe(403);
  });

  it('check groups, extras and uids one by one once the user is allowed', async () => {
    server.setRbac(SA, [
      { verbs: ['impersonate'], apiGroups: [''], resources: ['users'], resourceNames: ['alice'] },
      { verbs: ['impersonate'], apiGroups: [''], resources: ['groups'], resourceNames: ['devs'] },
    ]);
    try {
      const group = await call('GET', '/api/v1/namespaces/h/pods', {
        headers: { 'impersonate-user': 'alice', 'impersonate-group': 'system:masters' },
      });
      expect(group.json.message).toBe(
        `groups "system:masters" is forbidden: User "${SA}" cannot impersonate resource "groups" in API group "" at the cluster scope`,
      );
      const extra = await call('GET', '/api/v1/namespaces/h/pods', {
        headers: {
          'impersonate-user': 'alice',
          'impersonate-group': 'devs',
          'impersonate-extra-scopes': 'view',
        },
      });
      expect(extra.json.message).toBe(
        `userextras.authentication.k8s.io "view" is forbidden: User "${SA}" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`,
      );
      const uid = await call('GET', '/api/v1/namespaces/h/pods', {
        headers: { 'impersonate-user': 'alice', 'impersonate-uid': '1234' },
      });
      expect(uid.json.message).toBe(
        `uids.authentication.k8s.io "1234" is forbidden: User "${SA}" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`,
      );
      const noUser = await call('GET', '/api/v1/namespaces/h/pods', {
        headers: { 'impersonate-group': 'devs', 'impersonate-extra-scopes': 'view' },
      });
      expect(noUser.status).toBe(500);
      expect(noUser.contentType).toBe('text/plain; charset=utf-8');
      expect(noUser.text).toBe(
        'Internal Server Error: "/api/v1/namespaces/h/pods": requested [{Group  devs    } {UserExtra  view  authentication.k8s.io/v1  scopes}] without impersonating a user',
      );
    } finally {
      server.setRbac(SA, undefined);
    }
  });

  it('when granted, act as the impersonated user with that user’s rules', async () => {
    server.setRbac(SA, [{ verbs: ['impersonate'], apiGroups: [''], resources: ['users'] }]);
    server.setRbac('alice', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], namespaces: ['h'] }]);
    try {
      const headers = { 'impersonate-user': 'alice' };
      expect((await call('GET', '/api/v1/namespaces/h/pods/p', { headers })).json.kind).toBe('Pod');
      const list = await call('GET', '/api/v1/namespaces/h/pods', { headers });
      expect(list.json.message).toBe(
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "h"',
      );
    } finally {
      server.setRbac(SA, undefined);
      server.setRbac('alice', undefined);
    }
  });

  it('are ignored by the lenient fake (strict: false), which is what strict mode exists to catch', async () => {
    const r = await call('GET', '/api/v1/namespaces/h/pods', {
      on: lenient,
      headers: { 'impersonate-user': 'alice' },
    });
    expect(r.status).toBe(200);
  });
});

describe('content negotiation', () => {
  it('refuses with 406 a client that accepts only protobuf, for built-in and custom resources alike', async () => {
    for (const path of ['/api/v1/namespaces/h/pods/p', '/apis/example.com/v1/namespaces/h/widgets']) {
      const r = await call('GET', path, { headers: { accept: 'application/vnd.kubernetes.protobuf' } });
      expect(r.status, path).toBe(406);
      expect(r.contentType).toBe('application/json');
      expect(r.json).toMatchObject({
        kind: 'Status',
        reason: 'NotAcceptable',
        code: 406,
        message: 'only the following media types are accepted: application/json, application/yaml',
      });
    }
    const watch = await call('GET', '/api/v1/namespaces/h/pods?watch=true', {
      headers: { accept: 'application/vnd.kubernetes.protobuf;stream=watch' },
    });
    expect(watch.status).toBe(406);
    const zeroQ = await call('GET', '/api/v1/namespaces/h/pods/p', {
      headers: { accept: 'application/vnd.kubernetes.protobuf, application/json;q=0' },
    });
    expect(zeroQ.status).toBe(406);
  });

  it('answers YAML to a YAML client, and JSON to wildcards', async () => {
    const yaml = await call('GET', '/api/v1/namespaces/h/pods/p', {
      headers: { accept: 'application/yaml' },
    });
    expect(yaml.status).toBe(200);
    expect(yaml.contentType).toBe('application/yaml');
    expect(parseYaml(yaml.text)).toMatchObject({ kind: 'Pod', metadata: { name: 'p' } });
    for (const accept of ['*/*', 'application/*', 'application/vnd.kubernetes.protobuf, */*']) {
      const r = await call('GET', '/api/v1/namespaces/h/pods/p', { headers: { accept } });
      expect(r.contentType, accept).toBe('application/json');
      expect(r.json.kind).toBe('Pod');
    }
  });

  it('was lenient before: the lenient fake answers JSON to a protobuf-only client', async () => {
    const r = await call('GET', '/api/v1/namespaces/h/pods/p', {
      on: lenient,
      headers: { accept: 'application/vnd.kubernetes.protobuf' },
    });
    expect(r.status).toBe(200);
  });
});

describe('request bodies', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wild' } };

  it('refuses Content-Type */* with 415, and takes a body without Content-Type as JSON', async () => {
    const wild = await call('POST', '/api/v1/namespaces/h/configmaps', {
      body: cm,
      headers: { 'content-type': '*/*' },
    });
    expect(wild.status).toBe(415);
    expect(wild.json).toMatchObject({
      kind: 'Status',
      reason: 'UnsupportedMediaType',
      code: 415,
      message:
        'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml',
    });
    const put = await call('PUT', '/api/v1/namespaces/h/pods/p', {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } },
      headers: { 'content-type': 'text/plain' },
    });
    expect(put.status).toBe(415);
    const res = await fetch(`${server.url}/api/v1/namespaces/h/configmaps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: new Blob([JSON.stringify({ ...cm, metadata: { name: 'untyped' } })]),
    });
    expect(res.status).toBe(201);
  });

  it('was lenient before: the lenient fake takes */* as JSON', async () => {
    const r = await call('POST', '/api/v1/namespaces/h/configmaps', {
      on: lenient,
      body: cm,
      headers: { 'content-type': '*/*' },
    });
    expect(r.status).toBe(201);
  });
});
