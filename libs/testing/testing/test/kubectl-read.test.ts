import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type SeededArgoDemo, seedArgoDemo } from '../src/index.js';
import { eventually, type KubeFixture, pod, startKubeFixture } from './kube-helpers.js';

let kube: KubeFixture;
let demo: SeededArgoDemo;

beforeAll(async () => {
  kube = await startKubeFixture();
  demo = seedArgoDemo(kube.server.store, { namespace: 'demo' });
});
afterAll(async () => {
  await kube?.server.close();
});

describe('real kubectl against the fake API server (reads)', () => {
  it('get pods -A prints the server-side table with namespaces', async () => {
    const out = await kube.ok('get', 'pods', '-A');
    expect(out).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE/);
    for (const p of demo.apps.flatMap((a) => a.pods)) {
      expect(out).toMatch(new RegExp(`demo\\s+${p.name}\\s+1/1\\s+Running\\s+0`));
    }
    // kubectl negotiated a Table, and used aggregated discovery.
    const list = kube.server.requests.find((r) => r.path === '/api/v1/pods');
    expect(list?.headers.accept).toContain('as=Table');
    expect(kube.server.requests.find((r) => r.path === '/apis')?.headers.accept).toContain(
      'APIGroupDiscoveryList',
    );
  });

  it('get pods -o yaml returns full objects', async () => {
    const doc = parse(await kube.ok('get', 'pods', '-n', 'demo', '-o', 'yaml')) as {
      kind: string;
      items: { metadata: { name: string; ownerReferences?: unknown[] } }[];
    };
    expect(doc.kind).toBe('List');
    expect(doc.items.map((i) => i.metadata.name)).toContain('debug-shell');
    expect(doc.items.filter((i) => i.metadata.ownerReferences).length).toBe(4);
  });

  it('get deploy resolves the short name and prints deployment columns', async () => {
    const out = await kube.ok('get', 'deploy', '-n', 'demo');
    expect(out).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE/);
    expect(out).toMatch(/guestbook\s+2\/2\s+2\s+2\s+/);
    const wide = await kube.ok('get', 'deploy', '-n', 'demo', '-o', 'wide');
    expect(wide).toMatch(/SELECTOR/);
    expect(wide).toContain('app=guestbook');
  });

  it('get app (CRD short name) shows the additional printer columns', async () => {
    const out = await kube.ok('get', 'apps', '-n', 'argocd');
    expect(out).toMatch(/^NAME\s+SYNC STATUS\s+HEALTH STATUS\s+AGE/);
    expect(out).toMatch(/guestbook\s+Synced\s+Healthy/);
  });

  it('describe pod shows owner and events', async () => {
    const target = demo.apps[0]!.pods[0]!;
    const out = await kube.ok('describe', 'pod', '-n', 'demo', target.name);
    expect(out).toMatch(new RegExp(`Name:\\s+${target.name}`));
    expect(out).toMatch(/Controlled By:\s+ReplicaSet\/guestbook-/);
    expect(out).toMatch(/Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned/);
    const events = kube.server.requests.find((r) => r.path === '/api/v1/namespaces/demo/events');
    expect(events?.query.fieldSelector).toContain(`involvedObject.name=${target.name}`);
  });

  it('api-resources lists built-ins and the Argo CD CRD with short names', async () => {
    const out = await kube.ok('api-resources');
    expect(out).toMatch(/deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
    expect(out).toMatch(/pods\s+po\s+v1\s+true\s+Pod/);
    expect(out).toMatch(/namespaces\s+ns\s+v1\s+false\s+Namespace/);
    expect(out).toMatch(/applications\s+app,apps\s+argoproj.io\/v1alpha1\s+true\s+Application/);
  });

  it('get --raw /apis returns the group list', async () => {
    const groups = JSON.parse(await kube.ok('get', '--raw', '/apis')) as {
      kind: string;
      groups: { name: string }[];
    };
    expect(groups.kind).toBe('APIGroupList');
    expect(groups.groups.map((g) => g.name)).toEqual(
      expect.arrayContaining(['apps', 'batch', 'argoproj.io']),
    );
  });

  it('get --chunk-size=2 pages through with continue tokens', async () => {
    for (let i = 0; i < 5; i++) kube.server.store.put(pod('chunked', `p${i}`));
    kube.server.clearRequests();
    const out = await kube.ok('get', 'pods', '-n', 'chunked', '--chunk-size=2');
    for (let i = 0; i < 5; i++) expect(out).toMatch(new RegExp(`^p${i}\\s`, 'm'));
    const pages = kube.server.requests.filter((r) => r.path === '/api/v1/namespaces/chunked/pods');
    expect(pages).toHaveLength(3);
    expect(pages.every((p) => p.query.limit === '2')).toBe(true);
    expect(pages[0]!.query.continue).toBeUndefined();
    expect(pages[1]!.query.continue).toBeTruthy();
    expect(pages[2]!.query.continue).toBeTruthy();
  });

  it('logs -f streams appended lines and ends when the pod is deleted', async () => {
    kube.server.store.put(pod('logs', 'talker'));
    kube.server.store.appendPodLog('logs', 'talker', 'line one');
    const follow = kube.spawn('logs', '-f', '-n', 'logs', 'talker');
    try {
      await follow.waitFor('line one');
      await eventually(() => expect(kube.server.activeLogFollows()).toBe(1));
      kube.server.store.appendPodLog('logs', 'talker', 'line two');
      await follow.waitFor('line two');
      expect(kube.server.requests.find((r) => r.path.endsWith('/talker/log'))?.query.follow).toBe('true');
      kube.server.store.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'logs', name: 'talker' });
      await new Promise<void>((resolve) => {
        if (follow.child.exitCode !== null) resolve();
        else follow.child.once('exit', () => resolve());
      });
      expect(kube.server.activeLogFollows()).toBe(0);
    } finally {
      await follow.stop();
    }
  });

  it('logs --tail and --timestamps', async () => {
    kube.server.store.put(pod('logs', 'quiet'));
    for (const l of ['a', 'b', 'c']) kube.server.store.appendPodLog('logs', 'quiet', l);
    expect(await kube.ok('logs', '-n', 'logs', 'quiet', '--tail=2')).toBe('b\nc\n');
    expect(await kube.ok('logs', '-n', 'logs', 'quiet', '--tail=1', '--timestamps')).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z c\n$/,
    );
  });

  it('auth can-i is answered (everything is allowed)', async () => {
    expect((await kube.ok('auth', 'can-i', 'delete', 'pods', '-n', 'demo')).trim()).toBe('yes');
  });

  it('exec runs in a demo pod', async () => {
    expect(await kube.ok('exec', '-n', 'demo', 'debug-shell', '--', 'cat', '/etc/hostname')).toBe(
      'debug-shell\n',
    );
  });
});
