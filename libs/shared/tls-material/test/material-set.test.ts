import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  createTestPki,
  type FakeKubeApiServer,
  makeTempDir,
  startFakeKubeApiServer,
  type TestPki,
} from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caBundleSpec, keyPairSpec, MaterialError, openMaterials, signingKeySpec } from '../src/index.js';

const logger = pino({ level: 'silent' });
let server: FakeKubeApiServer;
let kubeConfig: KubeConfig;
let pki: TestPki;
let dir: string;

const b64 = (s: string) => Buffer.from(s).toString('base64');

beforeAll(async () => {
  server = await startFakeKubeApiServer();
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig());
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  pki = await createTestPki();
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: {
      metadata: { name: 'argocd-agent-ca', namespace: 'argocd' },
      data: { 'ca.crt': b64(pki.ca.certPem) },
    },
  });
  dir = makeTempDir('material-set-');
});
afterAll(async () => {
  await server?.close();
});

describe('openMaterials', () => {
  it('opens files and Secrets together, reloads them together and stops every watch', async () => {
    const cert = path.join(dir, 'tls.crt');
    const key = path.join(dir, 'tls.key');
    const first = await pki.serverCert();
    writeFileSync(cert, first.certPem);
    writeFileSync(key, first.keyPem);
    const watchesBefore = server.activeWatches();
    const m = await openMaterials({ kubeConfig, namespace: 'argocd', logger }, async (set) => ({
      pair: await set.open(
        keyPairSpec('the server certificate', {
          kind: 'server',
          files: { cert, key },
          required: true,
          fileOptions: '--tls-cert',
        }),
      ),
      ca: await set.open(
        caBundleSpec('the CA', {
          kind: 'ca',
          file: undefined,
          secret: set.secret('argocd-agent-ca', '--tls-ca-secret-name', ['ca.crt']),
          required: true,
          fileOptions: '--root-ca-path',
        }),
      ),
    }));
    expect(m.ca.source).toBe('Secret argocd/argocd-agent-ca');
    await expect.poll(() => server.activeWatches()).toBe(watchesBefore + 1);
    const second = await pki.serverCert();
    writeFileSync(cert, second.certPem);
    writeFileSync(key, second.keyPem);
    await m.reload();
    expect(m.pair.current?.cert.toString()).toBe(second.certPem);
    m.stop();
    await expect.poll(() => server.activeWatches()).toBe(watchesBefore);
  });

  it('stops what it opened when a later piece cannot be opened, and passes the error on', async () => {
    const watchesBefore = server.activeWatches();
    const err = await openMaterials({ kubeConfig, namespace: 'argocd', logger }, async (set) => ({
      ca: await set.open(
        caBundleSpec('the CA', {
          kind: 'ca',
          file: undefined,
          secret: set.secret('argocd-agent-ca', '--tls-ca-secret-name'),
          required: true,
          fileOptions: '--root-ca-path',
        }),
      ),
      key: await set.open(
        signingKeySpec('the token key', {
          kind: 'token-key',
          file: undefined,
          secret: set.secret('no-such-jwt', '--jwt-secret-name'),
          required: true,
          fileOptions: '--token-key-path',
        }),
      ),
    })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MaterialError);
    expect(String(err)).toMatch(/no-such-jwt \(--jwt-secret-name\) does not exist; give --token-key-path/);
    // The CA Secret's watch, opened first, is gone too.
    await expect.poll(() => server.activeWatches()).toBe(watchesBefore);
  });

  it('reads files only without a Kubernetes API: a required piece without a file is refused', async () => {
    const err = await openMaterials({ kubeConfig: undefined, namespace: 'argocd', logger }, async (set) => {
      expect(set.secret('argocd-agent-ca', '--tls-ca-secret-name')).toBeUndefined();
      return {
        ca: await set.open(
          caBundleSpec('the CA', {
            kind: 'ca',
            file: undefined,
            secret: set.secret('argocd-agent-ca', '--tls-ca-secret-name'),
            required: true,
            fileOptions: '--root-ca-path',
          }),
        ),
      };
    }).catch((e: unknown) => e);
    expect(String(err)).toMatch(/the CA: no file was given and no Secret can be read; give --root-ca-path/);
  });
});
