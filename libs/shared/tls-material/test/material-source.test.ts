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
import {
  caBundleSpec,
  keyPairSpec,
  MaterialError,
  MaterialErrorCode,
  openMaterial,
  SecretStore,
  signingKeySpec,
} from '../src/index.js';

const logger = pino({ level: 'silent' });
let server: FakeKubeApiServer;
let core: CoreV1Api;
let store: SecretStore;
let pki: TestPki;
let dir: string;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const put = async (name: string, data: Record<string, string>) => {
  const body = {
    metadata: { name, namespace: 'argocd' },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
  try {
    await core.replaceNamespacedSecret({ name, namespace: 'argocd', body });
  } catch {
    await core.createNamespacedSecret({ namespace: 'argocd', body });
  }
};
const secretRequests = () => server.requests.filter((r) => r.path.includes('/secrets')).length;

beforeAll(async () => {
  server = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
  store = new SecretStore(kc, 'argocd', logger);
  pki = await createTestPki();
  dir = makeTempDir('tls-material-');
});
afterAll(async () => {
  store?.stop();
  await server?.close();
});

describe('openMaterial', () => {
  it('reads files when they are given and never asks the API for the Secret', async () => {
    const server1 = await pki.serverCert();
    const cert = path.join(dir, 'files.crt');
    const key = path.join(dir, 'files.key');
    writeFileSync(cert, server1.certPem);
    writeFileSync(key, server1.keyPem);
    await put('argocd-agent-principal-tls', { 'tls.crt': 'not used', 'tls.key': 'not used' });
    const before = secretRequests();
    const m = await openMaterial(
      keyPairSpec('server certificate', {
        kind: 'server',
        files: { cert, key },
        secret: { store, name: 'argocd-agent-principal-tls', option: '--tls-secret-name' },
        required: true,
        fileOptions: '--tls-cert and --tls-key',
      }),
      logger,
    );
    expect(m.source).toBe(`files ${cert}, ${key}`);
    expect(m.current?.cert.toString()).toBe(server1.certPem);
    expect(secretRequests()).toBe(before);
  });

  it('reads a kubernetes.io/tls Secret, follows its rotation, and keeps the last good pair when it turns bad', async () => {
    const first = await pki.serverCert(['first.example']);
    const second = await pki.serverCert(['second.example']);
    await put('rotating-tls', { 'tls.crt': first.certPem, 'tls.key': first.keyPem });
    const m = await openMaterial(
      keyPairSpec('server certificate', {
        kind: 'server',
        files: { cert: undefined, key: undefined },
        secret: { store, name: 'rotating-tls', option: '--tls-secret-name' },
        required: true,
        fileOptions: '--tls-cert and --tls-key',
      }),
      logger,
    );
    expect(m.source).toBe('Secret argocd/rotating-tls');
    expect(m.current?.cert.toString()).toBe(first.certPem);
    const seen: string[] = [];
    m.onChange((v) => seen.push(v.cert.toString()));
    const rotated = new Promise<void>((resolve) => m.onChange(() => resolve()));
    await put('rotating-tls', { 'tls.crt': second.certPem, 'tls.key': second.keyPem });
    await rotated;
    expect(m.current?.cert.toString()).toBe(second.certPem);
    // A key that does not belong to the certificate: refused, the second pair stays; the
    // third, good one proves the bad one was seen and skipped rather than never delivered.
    const third = await pki.serverCert(['third.example']);
    await put('rotating-tls', { 'tls.crt': third.certPem, 'tls.key': first.keyPem });
    const again = new Promise<void>((resolve) => m.onChange(() => resolve()));
    await put('rotating-tls', { 'tls.crt': third.certPem, 'tls.key': third.keyPem });
    await again;
    expect(seen).toEqual([second.certPem, third.certPem]);
    m.stop();
  });

  it('refuses to start without required material, naming the Secret and the file options', async () => {
    const err = await openMaterial(
      keyPairSpec('the gateway server certificate', {
        kind: 'server',
        files: { cert: undefined, key: undefined },
        secret: { store, name: 'argocd-agent-principal-tls-missing', option: '--tls-secret-name' },
        required: true,
        fileOptions: '--tls-cert and --tls-key',
      }),
      logger,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MaterialError);
    expect((err as MaterialError).code).toBe(MaterialErrorCode.NOT_FOUND);
    expect((err as Error).message).toBe(
      'the gateway server certificate: Secret argocd/argocd-agent-principal-tls-missing (--tls-secret-name) does not exist; give --tls-cert and --tls-key',
    );
  });

  it('leaves optional material off while its Secret is absent and picks it up when created', async () => {
    const m = await openMaterial(
      signingKeySpec('token key', {
        kind: 'token-key',
        file: undefined,
        secret: { store, name: 'argocd-agent-jwt-later', option: '--jwt-secret-name' },
        required: false,
        fileOptions: '--token-key-path',
      }),
      logger,
    );
    expect(m.current).toBeUndefined();
    const appeared = new Promise<string>((resolve) => m.onChange(resolve));
    await put('argocd-agent-jwt-later', { 'jwt.key': pki.ca.keyPem });
    expect(await appeared).toBe(pki.ca.keyPem);
  });

  it("reads a CA Secret's certificate keys and never its private key", async () => {
    const other = await pki.foreignCa();
    // tls.key is not even a key: reading it would fail.
    await put('argocd-agent-ca', {
      'tls.crt': pki.ca.certPem,
      'ca.crt': other.ca.certPem,
      'tls.key': 'garbage',
    });
    const m = await openMaterial(
      caBundleSpec('client CA', {
        kind: 'ca',
        file: undefined,
        secret: {
          store,
          name: 'argocd-agent-ca',
          option: '--tls-ca-secret-name',
          keys: ['ca.crt', 'tls.crt'],
        },
        required: true,
        fileOptions: '--root-ca-path',
      }),
      logger,
    );
    const bundle = m.current!.toString();
    expect(bundle).toContain(pki.ca.certPem.trim());
    expect(bundle).toContain(other.ca.certPem.trim());
    expect(bundle).not.toContain('garbage');
    expect(bundle).not.toContain('PRIVATE KEY');
  });

  it('says the service account is forbidden when the API answers 403', async () => {
    // No credentials configured: requests act as system:anonymous, here granted nothing.
    server.setRbac('system:anonymous', []);
    const err = await openMaterial(
      signingKeySpec('token key', {
        kind: 'token-key',
        file: undefined,
        secret: { store, name: 'argocd-agent-jwt-forbidden', option: '--jwt-secret-name' },
        required: true,
        fileOptions: '--token-key-path',
      }),
      logger,
    ).catch((e: unknown) => e);
    server.setRbac('system:anonymous', undefined);
    expect((err as MaterialError).code).toBe(MaterialErrorCode.UNAVAILABLE);
    expect((err as Error).message).toContain(
      'forbidden (the service account needs get, list and watch on it)',
    );
  });
});
