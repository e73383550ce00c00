import type { IncomingMessage } from 'node:http';
import { parseAuthMethod } from '@pullplane/auth';
import { describe, expect, it } from 'vitest';
import { identifyCaller, resolveExtensionTarget } from '../src/index.js';

const BASE = 'https://argocd-agent-resource-proxy.argocd.svc:9090';
const req = (headers: Record<string, string | string[]>): IncomingMessage =>
  ({ headers, socket: {} }) as unknown as IncomingMessage;

describe('resolveExtensionTarget', () => {
  it('splits /<extension>/<path> and keeps the query as sent', () => {
    expect(
      resolveExtensionTarget(
        '/metrics/api/v1/query?q=up&x=%20',
        { 'argocd-target-cluster-name': 'agent-a' },
        [],
      ),
    ).toEqual({
      ok: true,
      target: { agent: 'agent-a', extension: 'metrics', path: '/api/v1/query?q=up&x=%20' },
    });
    expect(resolveExtensionTarget('/metrics', { 'argocd-target-cluster-name': 'agent-a' }, [])).toMatchObject(
      {
        ok: true,
        target: { path: '/' },
      },
    );
  });

  it.each([
    [`${BASE}/clusters/agent-b`, 'agent-b'],
    [`${BASE}/clusters/agent-b/`, 'agent-b'],
    [`${BASE}?agentName=agent-b`, 'agent-b'],
  ])('maps the cluster URL %s to %s', (url, agent) => {
    const r = resolveExtensionTarget('/m/x', { 'argocd-target-cluster-url': url }, [BASE]);
    expect(r).toMatchObject({ ok: true, target: { agent } });
  });

  it.each([
    ['another host', 'https://evil.example:9090/clusters/agent-b'],
    ['another port', 'https://argocd-agent-resource-proxy.argocd.svc:9091/clusters/agent-b'],
    ['another scheme', 'http://argocd-agent-resource-proxy.argocd.svc:9090/clusters/agent-b'],
    ['a deeper path', `${BASE}/clusters/agent-b/api`],
    ['extra parameters', `${BASE}?agentName=agent-b&x=1`],
    ['a bad agent name', `${BASE}/clusters/Agent_B`],
    ['credentials in the URL', 'https://u:p@argocd-agent-resource-proxy.argocd.svc:9090/clusters/agent-b'],
    ['not a URL', 'agent-b'],
  ])('refuses a cluster URL with %s', (_what, url) => {
    const r = resolveExtensionTarget('/m/x', { 'argocd-target-cluster-url': url }, [BASE]);
    expect(r).toMatchObject({ ok: false, extension: 'm', failure: { name: 'BAD_TARGET' } });
  });

  it('refuses repeated target headers instead of picking one', () => {
    const r = resolveExtensionTarget(
      '/m/x',
      { 'argocd-target-cluster-name': ['agent-a', 'agent-b'] as never },
      [],
    );
    expect(r).toMatchObject({ ok: false, failure: { name: 'BAD_HEADER' } });
  });

  it.each(['/', '/bad name/x', '/m:x/y', '/.hidden/x'])('refuses %s as an extension path', (path) => {
    const r = resolveExtensionTarget(path, { 'argocd-target-cluster-name': 'agent-a' }, []);
    expect(r.ok).toBe(false);
  });
});

describe('identifyCaller in mesh mode', () => {
  const meshIdentity = parseAuthMethod('istio', {
    mesh: { trustDomain: 'cluster.local', namespaces: ['argocd'] },
  });
  if (meshIdentity.kind !== 'header') throw new Error('istio is a header method');
  const opts = { allowed: ['argocd-server'], meshIdentity };
  const xfcc = (ns: string, sa: string) => ({
    'x-forwarded-client-cert': `By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-extension-proxy;URI=spiffe://cluster.local/ns/${ns}/sa/${sa}`,
  });

  it('accepts the Argo CD server service account', async () => {
    expect(await identifyCaller(req(xfcc('argocd', 'argocd-server')), opts)).toEqual({
      ok: true,
      caller: { identity: 'argocd-server', via: 'mesh' },
    });
  });

  it('refuses another service account (403) and another namespace (401)', async () => {
    expect(await identifyCaller(req(xfcc('argocd', 'argocd-repo-server')), opts)).toMatchObject({
      ok: false,
      failure: { name: 'NOT_ALLOWED' },
    });
    expect(await identifyCaller(req(xfcc('evil', 'argocd-server')), opts)).toMatchObject({
      ok: false,
      failure: { name: 'BAD_CREDENTIALS' },
    });
  });

  it('refuses a caller without identity', async () => {
    expect(await identifyCaller(req({}), opts)).toMatchObject({
      ok: false,
      failure: { name: 'NO_CREDENTIALS' },
    });
  });
});
