import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_SERVICE_ACCOUNT_USER,
  type FakeKubeApiServer,
  FULL_ACCESS_RULES,
  type PolicyRule,
  startFakeKubeApiServer,
} from '../src/index.js';
import { ruleAllows } from '../src/kube/rbac.js';

const TOKEN = 'sa-token';
const USER = 'system:serviceaccount:argocd:narrow';
const RULES: PolicyRule[] = [
  { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], namespaces: ['h'] },
  { verbs: ['get'], apiGroups: [''], resources: ['pods/log'], namespaces: ['h'] },
  { verbs: ['get'], apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['web'] },
  { verbs: ['patch'], apiGroups: ['apps'], resources: ['*/scale'] },
  { verbs: ['list'], apiGroups: [''], resources: ['namespaces'] },
  // A Role in "default" covers the Namespace object "default" itself.
  { verbs: ['get'], apiGroups: [''], resources: ['namespaces'], namespaces: ['default'] },
];

let server: FakeKubeApiServer;
beforeAll(async () => {
  server = await startFakeKubeApiServer({ token: TOKEN, tokenUser: USER, rbac: { [USER]: RULES } });
  server.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h' } });
  server.store.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'h' }, spec: {} });
  for (const name of ['web', 'db']) {
    server.store.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'h' },
      spec: { replicas: 1, selector: { matchLabels: { app: name } } },
    });
  }
});
afterAll(async () => {
  await server?.close();
});

async function call(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': contentType }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: test convenience for JSON bodies
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

const deny = (subject: string, verb: string, resource: string, group: string, scope: string) =>
  `${subject} is forbidden: User "${USER}" cannot ${verb} resource "${resource}" in API group "${group}" ${scope}`;

describe('RBAC rules per user', () => {
  it('allow what the rules grant', async () => {
    expect((await call('GET', '/api/v1/namespaces/h/pods')).status).toBe(200);
    expect((await call('GET', '/api/v1/namespaces/h/pods/p')).status).toBe(200);
    expect((await call('GET', '/apis/apps/v1/namespaces/h/deployments/web')).status).toBe(200);
    expect((await call('GET', '/api/v1/namespaces')).status).toBe(200);
    expect((await call('GET', '/api/v1/namespaces/default')).status).toBe(200);
    const scale = await call(
      'PATCH',
      '/apis/apps/v1/namespaces/h/deployments/db/scale',
      { spec: { replicas: 3 } },
      'application/merge-patch+json',
    );
    expect(scale.status).toBe(200);
  });

  it('refuse the rest with the API server’s 403 Status, worded per scope, name and group', async () => {
    const cases: [string, string, string][] = [
      [
        'GET',
        '/api/v1/namespaces/default/pods',
        deny('pods', 'list', 'pods', '', 'in the namespace "default"'),
      ],
      [
        'GET',
        '/api/v1/namespaces/h/pods?watch=true',
        deny('pods', 'watch', 'pods', '', 'in the namespace "h"'),
      ],
      [
        'DELETE',
        '/api/v1/namespaces/h/pods/p',
        deny('pods "p"', 'delete', 'pods', '', 'in the namespace "h"'),
      ],
      [
        'GET',
        '/apis/apps/v1/namespaces/h/deployments/db',
        deny('deployments.apps "db"', 'get', 'deployments', 'apps', 'in the namespace "h"'),
      ],
      [
        'GET',
        '/apis/apps/v1/namespaces/h/deployments',
        deny('deployments.apps', 'list', 'deployments', 'apps', 'in the namespace "h"'),
      ],
      [
        'GET',
        '/api/v1/namespaces/h',
        deny('namespaces "h"', 'get', 'namespaces', '', 'in the namespace "h"'),
      ],
      ['GET', '/api/v1/pods', deny('pods', 'list', 'pods', '', 'at the cluster scope')],
      [
        'GET',
        '/apis/apps/v1/namespaces/h/deployments/db/scale',
        deny('deployments.apps "db"', 'get', 'deployments/scale', 'apps', 'in the namespace "h"'),
      ],
    ];
    for (const [method, path, message] of cases) {
      const r = await call(method, path);
      expect(r.status, path).toBe(403);
      expect(r.json, path).toMatchObject({
        kind: 'Status',
        status: 'Failure',
        reason: 'Forbidden',
        code: 403,
        message,
      });
    }
    const create = await call('POST', '/api/v1/namespaces/h/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
    });
    expect(create.json).toMatchObject({
      message: deny('configmaps', 'create', 'configmaps', '', 'in the namespace "h"'),
      details: { kind: 'configmaps' },
    });
    expect((await call('GET', '/apis/apps/v1/namespaces/h/deployments/db')).json.details).toEqual({
      name: 'db',
      group: 'apps',
      kind: 'deployments',
    });
  });

  it('answer SelfSubjectAccessReviews (kubectl auth can-i) from the same rules', async () => {
    const review = (resourceAttributes: Record<string, string>) =>
      call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes },
      });
    expect((await review({ verb: 'list', resource: 'pods', namespace: 'h' })).json.status).toEqual({
      allowed: true,
    });
    expect((await review({ verb: 'list', resource: 'secrets', namespace: 'h' })).json.status).toEqual({
      allowed: false,
    });
  });

  it('change at run time, and a user without rules of their own gets full access but impersonation', async () => {
    server.setRbac(USER, undefined);
    try {
      expect((await call('GET', '/api/v1/namespaces/default/pods')).status).toBe(200);
    } finally {
      server.setRbac(USER, RULES);
    }
    expect((await call('GET', '/api/v1/namespaces/default/pods')).status).toBe(403);
    const everything = { verb: 'delete', apiGroup: 'x.io', resource: 'things', namespace: 'n', name: 'a' };
    expect(FULL_ACCESS_RULES.some((r) => ruleAllows(r, everything))).toBe(true);
    expect(FULL_ACCESS_RULES.some((r) => ruleAllows(r, { ...everything, verb: 'impersonate' }))).toBe(false);
    expect(AGENT_SERVICE_ACCOUNT_USER).toBe('system:serviceaccount:argocd:argocd-agent-agent');
  });

  it('match resources as RBAC does: "*/scale" covers every scale, "pods/*" nothing', () => {
    const base = { verb: 'get', apiGroup: '' };
    expect(
      ruleAllows(
        { verbs: ['get'], apiGroups: [''], resources: ['pods/*'] },
        { ...base, resource: 'pods', subresource: 'log' },
      ),
    ).toBe(false);
    expect(
      ruleAllows(
        { verbs: ['get'], apiGroups: [''], resources: ['*/log'] },
        { ...base, resource: 'pods', subresource: 'log' },
      ),
    ).toBe(true);
    expect(
      ruleAllows(
        { verbs: ['get'], apiGroups: [''], resources: ['pods'] },
        { ...base, resource: 'pods', subresource: 'log' },
      ),
    ).toBe(false);
    expect(
      ruleAllows(
        { verbs: ['*'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] },
        { ...base, resource: 'pods' },
      ),
    ).toBe(false);
  });
});
