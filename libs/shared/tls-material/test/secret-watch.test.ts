import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type FakeKubeApiServer, makeTempDir, runKubectl, startFakeKubeApiServer } from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretData, SecretWatch } from '../src/index.js';

const logger = pino({ level: 'silent' });
let server: FakeKubeApiServer;
let kc: KubeConfig;
let core: CoreV1Api;

beforeAll(async () => {
  // Short server-side watch timeouts and history: watches end and expire during the tests.
  server = await startFakeKubeApiServer({ defaultWatchTimeoutSeconds: 1, historySize: 20 });
  kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
});
afterAll(async () => {
  await server?.close();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (name: string, data: Record<string, string>) => ({
  metadata: { name, namespace: 'argocd' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const text = (d: SecretData) =>
  d === undefined ? undefined : Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v.toString()]));

/** Resolves with the next `change` event. */
const nextChange = (w: SecretWatch) =>
  new Promise<SecretData>((resolve) => w.once('change', (d) => resolve(d)));

describe('SecretWatch against the fake API server', () => {
  it('reads a Secret that exists, then follows updates and deletion, with no event for an unchanged write', async () => {
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('watched', { 'tls.crt': 'one' }) });
    const w = new SecretWatch({ kubeConfig: kc, namespace: 'argocd', name: 'watched', logger });
    const events: Array<Record<string, string> | undefined> = [];
    w.on('change', (d) => events.push(text(d)));
    expect(text(await w.start())).toEqual({ 'tls.crt': 'one' });

    let changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'watched',
      namespace: 'argocd',
      body: secret('watched', { 'tls.crt': 'two' }),
    });
    expect(text(await changed)).toEqual({ 'tls.crt': 'two' });

    // The same data written again (a new resourceVersion, a label): no change event; the
    // next real change proves the watch was still delivering.
    const same = secret('watched', { 'tls.crt': 'two' });
    await core.replaceNamespacedSecret({
      name: 'watched',
      namespace: 'argocd',
      body: { ...same, metadata: { ...same.metadata, labels: { touched: 'yes' } } },
    });
    changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'watched',
      namespace: 'argocd',
      body: secret('watched', { 'tls.crt': 'three' }),
    });
    expect(text(await changed)).toEqual({ 'tls.crt': 'three' });

    changed = nextChange(w);
    await core.deleteNamespacedSecret({ name: 'watched', namespace: 'argocd' });
    expect(await changed).toBeUndefined();
    expect(events).toEqual([{ 'tls.crt': 'two' }, { 'tls.crt': 'three' }, undefined]);
    w.stop();
  });

  it('starts on an absent Secret and reports it when it is created', async () => {
    const w = new SecretWatch({ kubeConfig: kc, namespace: 'argocd', name: 'later', logger });
    expect(await w.start()).toBeUndefined();
    const changed = nextChange(w);
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('later', { 'jwt.key': 'k' }) });
    expect(text(await changed)).toEqual({ 'jwt.key': 'k' });
    w.stop();
  });

  it('does not mix up Secrets: a change to another Secret is not an event', async () => {
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('mine', { a: '1' }) });
    const w = new SecretWatch({ kubeConfig: kc, namespace: 'argocd', name: 'mine', logger });
    const events: unknown[] = [];
    w.on('change', (d) => events.push(text(d)));
    await w.start();
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('other', { a: '2' }) });
    const changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'mine',
      namespace: 'argocd',
      body: secret('mine', { a: '3' }),
    });
    await changed;
    expect(events).toEqual([{ a: '3' }]);
    w.stop();
  });

  it('resumes after the server ends the watch (1 s timeout) and re-lists after 410 Gone', async () => {
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('resumed', { v: '0' }) });
    const w = new SecretWatch({
      kubeConfig: kc,
      namespace: 'argocd',
      name: 'resumed',
      logger,
      backoffInitialMs: 50,
      backoffMaxMs: 200,
    });
    await w.start();
    // Past several server-side watch timeouts: still following.
    await new Promise((r) => setTimeout(r, 2_500)); // wait-ok: time passing past watch timeouts is the scenario
    let changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'resumed',
      namespace: 'argocd',
      body: secret('resumed', { v: '1' }),
    });
    expect(text(await changed)).toEqual({ v: '1' });

    // Failing watch requests: the watcher backs off and re-lists.
    server.setFault((req) => (req.query.get('watch') === 'true' ? { status: 503 } : undefined));
    await new Promise((r) => setTimeout(r, 1_200)); // wait-ok: time passing past watch timeouts is the scenario
    await core.replaceNamespacedSecret({
      name: 'resumed',
      namespace: 'argocd',
      body: secret('resumed', { v: '2' }),
    });
    changed = nextChange(w);
    server.setFault(undefined);
    expect(text(await changed)).toEqual({ v: '2' });

    // A watch resumed from a resourceVersion the server no longer has: it answers with an
    // ERROR event (410) and ends the stream normally; only a re-list finds the latest data.
    server.setFault((req) => (req.query.get('watch') === 'true' ? { delayMs: 1_500 } : undefined));
    await new Promise((r) => setTimeout(r, 1_100)); // wait-ok: time passing past watch timeouts is the scenario
    for (let i = 0; i < 30; i++) {
      await core.createNamespacedSecret({
        namespace: 'argocd',
        body: secret(`churn-${i}`, { i: String(i) }),
      });
    }
    changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'resumed',
      namespace: 'argocd',
      body: secret('resumed', { v: '3' }),
    });
    expect(text(await changed)).toEqual({ v: '3' });
    server.setFault(undefined);
    changed = nextChange(w);
    await core.replaceNamespacedSecret({
      name: 'resumed',
      namespace: 'argocd',
      body: secret('resumed', { v: '4' }),
    });
    expect(text(await changed)).toEqual({ v: '4' });
    w.stop();
  }, 20_000);

  it('fails start() when the API refuses, so the caller can say why', async () => {
    // No credentials configured: requests act as system:anonymous, here granted nothing.
    server.setRbac('system:anonymous', []);
    const w = new SecretWatch({ kubeConfig: kc, namespace: 'argocd', name: 'forbidden', logger });
    await expect(w.start()).rejects.toMatchObject({ code: 403 });
    server.setRbac('system:anonymous', undefined);
    w.stop();
  });

  it('serves the field-selected list the way kubectl reads it', async () => {
    const kubeconfig = await server.writeKubeconfig(join(makeTempDir('tls-material-kubeconfig-'), 'config'));
    await core.createNamespacedSecret({ namespace: 'argocd', body: secret('by-name', { x: 'y' }) });
    const r = await runKubectl(
      ['-n', 'argocd', 'get', 'secrets', '--field-selector', 'metadata.name=by-name', '-o', 'name'],
      { kubeconfig },
    );
    expect(r.stdout.trim()).toBe('secret/by-name');
  });
});
