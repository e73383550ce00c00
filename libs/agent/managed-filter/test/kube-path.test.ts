import { describe, expect, it } from 'vitest';
import { ManagedFilterError, ManagedFilterErrorCode, parseKubePath, targetOf } from '../src/index.js';

function fails(method: string, path: string): ManagedFilterError {
  try {
    parseKubePath(method, path);
  } catch (err) {
    expect(err).toBeInstanceOf(ManagedFilterError);
    return err as ManagedFilterError;
  }
  throw new Error(`expected ${method} ${JSON.stringify(path)} to be rejected`);
}

describe('parseKubePath: discovery', () => {
  it.each([
    ['/version', '', ''],
    ['/version?timeout=32s', '', ''],
    ['/api', '', ''],
    ['/api/v1', '', 'v1'],
    ['/apis', '', ''],
    ['/apis/apps', 'apps', ''],
    ['/apis/apps/v1', 'apps', 'v1'],
    ['/apis/networking.k8s.io/v1', 'networking.k8s.io', 'v1'],
    ['/openapi/v2', '', ''],
    ['/openapi/v3', '', ''],
    ['/openapi/v3/apis/apps/v1?hash=F1E4C1A2B3', '', ''],
  ])('%s', (path, group, version) => {
    const p = parseKubePath('GET', path);
    expect(p).toMatchObject({ kind: 'discovery', verb: 'get', group, version, resource: '' });
  });

  it('maps non-GET discovery requests to their write verbs (decideRequest refuses them)', () => {
    expect(parseKubePath('POST', '/api').verb).toBe('create');
  });
});

describe('parseKubePath: resources', () => {
  it('parses a namespaced core list', () => {
    const p = parseKubePath('GET', '/api/v1/namespaces/guestbook/pods?limit=500');
    expect(p).toMatchObject({ kind: 'resource', verb: 'list', group: '', version: 'v1', resource: 'pods' });
    expect(p.namespace).toBe('guestbook');
    expect(p.name).toBeUndefined();
    expect(p.query.get('limit')).toBe('500');
    expect(p.rawQuery).toBe('limit=500');
    expect(p.path).toBe('/api/v1/namespaces/guestbook/pods');
  });

  it('parses all-namespaces and cluster-scoped lists', () => {
    expect(parseKubePath('GET', '/api/v1/pods')).toMatchObject({ verb: 'list', resource: 'pods' });
    expect(parseKubePath('GET', '/api/v1/pods')).not.toHaveProperty('namespace');
    expect(parseKubePath('GET', '/api/v1/nodes')).toMatchObject({ verb: 'list', resource: 'nodes' });
    expect(parseKubePath('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles')).toMatchObject({
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
    });
  });

  it('parses named and subresource requests in groups', () => {
    expect(parseKubePath('GET', '/apis/apps/v1/namespaces/guestbook/deployments/guestbook-ui')).toMatchObject(
      {
        verb: 'get',
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        namespace: 'guestbook',
        name: 'guestbook-ui',
      },
    );
    expect(
      parseKubePath('GET', '/api/v1/namespaces/guestbook/pods/web-0/log?follow=true&container=web'),
    ).toMatchObject({
      verb: 'get',
      resource: 'pods',
      name: 'web-0',
      subresource: 'log',
    });
    expect(parseKubePath('PUT', '/apis/apps/v1/namespaces/guestbook/deployments/web/scale')).toMatchObject({
      verb: 'update',
      subresource: 'scale',
    });
    expect(parseKubePath('GET', '/apis/example.com/v1alpha1/widgets/w1')).toMatchObject({
      group: 'example.com',
      version: 'v1alpha1',
      resource: 'widgets',
      name: 'w1',
    });
    expect(parseKubePath('GET', '/apis/example.com/v1alpha1/widgets/w1')).not.toHaveProperty('namespace');
  });

  it('treats /namespaces/<ns> and its status/finalize as the Namespace object, like the API server', () => {
    expect(parseKubePath('GET', '/api/v1/namespaces')).toMatchObject({
      verb: 'list',
      resource: 'namespaces',
    });
    const ns = parseKubePath('GET', '/api/v1/namespaces/guestbook');
    expect(ns).toMatchObject({ verb: 'get', resource: 'namespaces', name: 'guestbook' });
    expect(ns.namespace).toBeUndefined();
    expect(parseKubePath('PUT', '/api/v1/namespaces/guestbook/finalize')).toMatchObject({
      verb: 'update',
      resource: 'namespaces',
      name: 'guestbook',
      subresource: 'finalize',
    });
    expect(parseKubePath('GET', '/api/v1/namespaces/guestbook/status')).toMatchObject({
      name: 'guestbook',
      subresource: 'status',
    });
  });

  it('maps methods to verbs', () => {
    const base = '/api/v1/namespaces/guestbook/configmaps';
    expect(parseKubePath('POST', base).verb).toBe('create');
    expect(parseKubePath('PUT', `${base}/cm`).verb).toBe('update');
    expect(parseKubePath('PATCH', `${base}/cm`).verb).toBe('patch');
    expect(parseKubePath('DELETE', `${base}/cm`).verb).toBe('delete');
    expect(parseKubePath('DELETE', base).verb).toBe('deletecollection');
    expect(parseKubePath('HEAD', `${base}/cm`).verb).toBe('get');
    expect(parseKubePath('get', `${base}/cm`).verb).toBe('get');
  });

  it('recognises watches: ?watch=true|1|True, legacy /watch/ paths, not ?watch=false', () => {
    for (const q of ['watch=true', 'watch=1', 'watch=True', 'watch=t', 'resourceVersion=81299&watch=true']) {
      expect(parseKubePath('GET', `/api/v1/namespaces/guestbook/pods?${q}`).verb).toBe('watch');
    }
    expect(parseKubePath('GET', '/api/v1/pods?watch=false').verb).toBe('list');
    expect(parseKubePath('GET', '/api/v1/pods?watch=0').verb).toBe('list');
    expect(parseKubePath('GET', '/api/v1/pods?watch=').verb).toBe('list');
    expect(parseKubePath('GET', '/api/v1/watch/namespaces/guestbook/pods')).toMatchObject({
      verb: 'watch',
      resource: 'pods',
      namespace: 'guestbook',
    });
    expect(parseKubePath('GET', '/apis/apps/v1/watch/deployments')).toMatchObject({
      verb: 'watch',
      group: 'apps',
    });
    expect(parseKubePath('GET', '/api/v1/watch/namespaces/guestbook/pods/web-0')).toMatchObject({
      verb: 'watch',
      name: 'web-0',
    });
    // A named GET ignores ?watch, as the API server does.
    expect(parseKubePath('GET', '/api/v1/namespaces/guestbook/pods/web-0?watch=true').verb).toBe('get');
  });

  it('decodes harmless percent-encodings in names', () => {
    expect(
      parseKubePath('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aaggregate-to-view').name,
    ).toBe('system:aggregate-to-view');
    expect(
      parseKubePath('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:basic-user').name,
    ).toBe('system:basic-user');
  });
});

describe('parseKubePath: hostile input', () => {
  const hostile = [
    '/api/v1/namespaces/guestbook/pods/../secrets',
    '/api/v1/namespaces/guestbook/pods/./web-0',
    '/api/v1/namespaces/guestbook/pods/..',
    '/api/v1//namespaces/guestbook/pods',
    '/api/v1/namespaces//pods',
    '/api/v1/namespaces/guestbook/pods/',
    '/api/v1/namespaces/guestbook/pods/%2e%2e/secrets',
    '/api/v1/namespaces/guestbook/pods/%2E%2E',
    '/api/v1/namespaces/guestbook/pods/web%2F..%2Fsecrets',
    '/api/v1/namespaces/guestbook/pods/web%2fx',
    '/api/v1/namespaces/guestbook/pods/web%00',
    '/api/v1/namespaces/guestbook/pods/web\u0000',
    '/api/v1/namespaces/guestbook/pods/web%252e%252e',
    '/api/v1/namespaces/guestbook/pods/web%5c..',
    '/api/v1/namespaces/guestbook/pods/web\\..\\secrets',
    '/api/v1/namespaces/guestbook/pods/web%',
    '/api/v1/namespaces/guestbook/pods/web%zz',
    '/api/v1/namespaces/guestbook/pods/web-0\r\nX-Injected: 1',
    '/api/v1/namespaces/guestbook/pods/web 0',
    '/api/v1/namespaces/guestbook/pods/\uff0e\uff0e',
    '/api/v1/namespaces/guestbook/pods/web-0#fragment',
    '/api/v1/namespaces/Guest_Book/pods',
    '/api/v1/namespaces/guestbook/Pods',
    '/apis/Apps/v1/deployments',
    '/apis/apps/V1/deployments',
    '/api/v1/watch',
    '//evil.example.com/api/v1/pods',
    'http://evil.example.com/api/v1/pods',
    'api/v1/pods',
    '',
    `/api/v1/namespaces/guestbook/configmaps/${'a'.repeat(254)}`,
    `/api/v1/pods?${'x'.repeat(9000)}`,
  ];

  it(`rejects ${hostile.length} traversal and smuggling attempts with 400`, () => {
    for (const path of hostile) {
      const err = fails('GET', path);
      expect(err.code, path).toBe(ManagedFilterErrorCode.INVALID_PATH);
      expect(err.httpStatus).toBe(400);
      expect(err.reason).toBe('BadRequest');
    }
  });

  it('refuses well-formed paths the proxy does not expose with 403', () => {
    for (const path of [
      '/',
      '/metrics',
      '/logs/kube-apiserver.log',
      '/healthz',
      '/api/v1/proxy/namespaces/guestbook/pods/web-0',
      '/api/v1/namespaces/guestbook/services/web/proxy/admin/delete',
      '/openapi/v9',
    ]) {
      const err = fails('GET', path);
      expect(err.code, path).toBe(ManagedFilterErrorCode.UNSUPPORTED_PATH);
      expect(err.httpStatus).toBe(403);
    }
  });

  it('refuses unknown methods and invalid watch values', () => {
    expect(fails('TRACE', '/api/v1/pods').httpStatus).toBe(405);
    expect(fails('POST', '/api/v1/watch/pods').code).toBe(ManagedFilterErrorCode.METHOD_NOT_ALLOWED);
    const err = fails('GET', '/api/v1/pods?watch=yes');
    expect(err.code).toBe(ManagedFilterErrorCode.INVALID_QUERY);
    expect(err.httpStatus).toBe(400);
  });
});

describe('targetOf', () => {
  it('points at the object itself, dropping the subresource and query', () => {
    expect(targetOf(parseKubePath('GET', '/api/v1/namespaces/guestbook/pods/web-0/log?follow=true'))).toEqual(
      {
        group: '',
        version: 'v1',
        resource: 'pods',
        namespace: 'guestbook',
        name: 'web-0',
        path: '/api/v1/namespaces/guestbook/pods/web-0',
      },
    );
    expect(targetOf(parseKubePath('PUT', '/api/v1/namespaces/guestbook/finalize'))?.path).toBe(
      '/api/v1/namespaces/guestbook',
    );
    expect(
      targetOf(parseKubePath('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aview'))?.path,
    ).toBe('/apis/rbac.authorization.k8s.io/v1/clusterroles/system:view');
    expect(targetOf(parseKubePath('GET', '/api/v1/pods'))).toBeUndefined();
    expect(targetOf(parseKubePath('GET', '/api'))).toBeUndefined();
  });
});
