import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestPki, type PolicyRule, runKubectl, startFakeKubeApiServer } from '../src/index.js';
import { type KubeFixture, startKubeFixture } from './kube-helpers.js';
import { channels, openChannels, runningPod } from './support/stream-clients.js';

/** What the API server and the kubelet refuse, as real kubectl 1.32 reports it. */

const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' };
const GET_POD: PolicyRule = { verbs: ['get'], apiGroups: [''], resources: ['pods'] };
const rule = (verbs: string[], resource: string): PolicyRule => ({
  verbs,
  apiGroups: [''],
  resources: [resource],
});

describe('exec and attach refusals', () => {
  let kube: KubeFixture;
  const run = (args: string[], env: Record<string, string> = {}) =>
    runKubectl(['-n', 'shells', ...args], { kubeconfig: kube.kubeconfig, env });
  const calls = (path: string) =>
    kube.server.requests.filter((r) => r.path === path).map((r) => `${r.method} ${r.status}`);

  let ca: string;
  beforeAll(async () => {
    // TLS, because kubectl sends no bearer token over plain http.
    const pki = await createTestPki();
    const cert = await pki.serverCert();
    ca = pki.ca.certPem;
    kube = await startKubeFixture({
      gitVersion: 'v1.32.4',
      token: 'alice-token',
      tokenUser: 'alice',
      tls: { cert: cert.certPem, key: cert.keyPem, ca },
    });
    kube.server.store.put(runningPod('shells', 'box'));
    const crashing = runningPod('shells', 'crash');
    crashing.status = {
      phase: 'Running',
      containerStatuses: [{ name: 'main', ready: false, state: { waiting: { reason: 'CrashLoopBackOff' } } }],
    } as never;
    kube.server.store.put(crashing);
    const unbound = runningPod('shells', 'unbound');
    delete (unbound.spec as { nodeName?: string }).nodeName;
    kube.server.store.put({ ...unbound, status: { phase: 'Pending' } });
    kube.server.store.put({
      ...runningPod('shells', 'two'),
      spec: {
        nodeName: 'n',
        containers: [
          { name: 'a', image: 'x' },
          { name: 'b', image: 'x' },
        ],
      },
    });
  });
  afterAll(() => kube.server.close());
  beforeEach(() => {
    kube.server.setRbac('alice', undefined);
    kube.server.clearRequests();
  });

  it('an unknown container is 400 from the API server, on WebSocket and again on the SPDY fallback', async () => {
    const r = await run(['exec', 'box', '-c', 'nope', '--', 'ls']);
    expect(r).toMatchObject({
      code: 1,
      stderr: 'Error from server (BadRequest): container nope is not valid for pod box\n',
    });
    expect(calls('/api/v1/namespaces/shells/pods/box/exec')).toEqual(['GET 400', 'POST 400']);
  });

  it('several containers and none named: 400 naming them', async () => {
    const r = await runKubectl(['-n', 'shells', 'exec', 'two', '--', 'ls'], { kubeconfig: kube.kubeconfig });
    // kubectl picks the first container itself (and says so); the API server would have asked.
    expect(r.stderr).toContain('Defaulted container "a" out of: a, b');
    const direct = await openChannels(
      kube.server,
      '/api/v1/namespaces/shells/pods/two/exec?command=ls&stdout=1',
      ['v5.channel.k8s.io'],
      { Authorization: 'Bearer alice-token' },
      ca,
    );
    expect(direct).toMatchObject({ status: 400 });
    expect(JSON.parse((direct as { body: string }).body).message).toBe(
      'a container name must be specified for pod two, choose one of: [a b]',
    );
  });

  it('a pod no node runs is 400: no host assigned', async () => {
    const r = await run(['exec', 'unbound', '--', 'ls']);
    expect(r.stderr).toBe('Error from server (BadRequest): pod unbound does not have a host assigned\n');
  });

  it('a container that is not running: the kubelet says so, through the translator or as an upgrade failure', async () => {
    const ws = await run(['exec', 'crash', '--', 'ls']);
    expect(ws).toMatchObject({
      code: 1,
      stderr: 'error: Internal error occurred: unable to upgrade connection: container not found ("main")\n',
    });
    const spdy = await run(['exec', 'crash', '--', 'ls'], SPDY);
    expect(spdy.stderr).toBe('error: unable to upgrade connection: container not found ("main")\n');
    const attach = await run(['attach', 'crash'], SPDY);
    expect(attach.stderr).toContain(
      'error: unable to upgrade connection: container main not found in pod crash_shells',
    );
  });

  it('RBAC: SPDY (a POST) needs create on pods/exec; WebSocket (a GET) needs get before 1.35', async () => {
    kube.server.setRbac('alice', [GET_POD, rule(['get'], 'pods/exec')]);
    expect(await run(['exec', 'box', '--', 'echo', 'ok'])).toMatchObject({ code: 0, stdout: 'ok\n' });
    const spdy = await run(['exec', 'box', '--', 'echo', 'ok'], SPDY);
    expect(spdy.stderr).toBe(
      'Error from server (Forbidden): pods "box" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "shells"\n',
    );

    kube.server.setRbac('alice', [GET_POD, rule(['create'], 'pods/exec')]);
    kube.server.clearRequests();
    // Refused on WebSocket, kubectl falls back to SPDY, where create is what counts.
    expect(await run(['exec', 'box', '--', 'echo', 'ok'])).toMatchObject({ code: 0, stdout: 'ok\n' });
    expect(calls('/api/v1/namespaces/shells/pods/box/exec')).toEqual(['GET 403', 'POST 101']);

    kube.server.setRbac('alice', [GET_POD]);
    expect((await run(['attach', 'box'], SPDY)).stderr).toContain(
      'cannot create resource "pods/attach" in API group "" in the namespace "shells"',
    );
  });

  it('RBAC from 1.35: a WebSocket upgrade needs create as well', async () => {
    const server = await startFakeKubeApiServer({
      gitVersion: 'v1.35.0',
      token: 't',
      tokenUser: 'carol',
      rbac: { carol: [GET_POD, rule(['get'], 'pods/exec')] },
    });
    try {
      server.store.put(runningPod('shells', 'box'));
      const path = '/api/v1/namespaces/shells/pods/box/exec?command=true&stdout=true';
      const auth = { Authorization: 'Bearer t' };
      const refused = await openChannels(server, path, ['v5.channel.k8s.io'], auth);
      expect(refused).toMatchObject({ status: 403 });
      expect(JSON.parse((refused as { body: string }).body).message).toContain(
        'User "carol" cannot create resource "pods/exec"',
      );
      server.setRbac('carol', [GET_POD, rule(['get', 'create'], 'pods/exec')]);
      const ok = await channels(server, path, ['v5.channel.k8s.io'], auth);
      expect((await ok.closed).code).toBe(1000);
      expect(ok.status()).toEqual({ metadata: {}, status: 'Success' });
    } finally {
      await server.close();
    }
  });

  it('impersonation: the session runs as the impersonated user, whose rules apply', async () => {
    kube.server.setRbac('alice', [
      { verbs: ['impersonate'], apiGroups: [''], resources: ['users'], resourceNames: ['bob'] },
    ]);
    const r = await run(['--as', 'bob', 'exec', 'box', '--', 'id']);
    expect(r).toMatchObject({ code: 0, stdout: 'uid=0(root) gid=0(root) groups=0(root)\n' });
    expect(kube.server.streamSessions().at(-1)?.user).toBe('bob');
    kube.server.setRbac('bob', [GET_POD]);
    try {
      const refused = await run(['--as', 'bob', 'exec', 'box', '--', 'id'], SPDY);
      expect(refused.stderr).toContain('User "bob" cannot create resource "pods/exec"');
    } finally {
      kube.server.setRbac('bob', undefined);
    }
  });
});
