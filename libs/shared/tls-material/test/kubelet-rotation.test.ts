import { X509Certificate } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, createServer, type Server } from 'node:tls';
import { type CertificateAndKey, issueCertificate } from '@pullplane/pki';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { createTestPki, makeTempDir, type TestPki } from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  caBundleSpec,
  currentListenerTls,
  followListenerMaterial,
  keyPairSpec,
  type Material,
  openMaterials,
} from '../src/index.js';

const logger = pino({ level: 'silent' });
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
let pki: TestPki;
let dir: string;
let server: Server;
let port: number;
let generation = 0;
let material: Awaited<ReturnType<typeof open>>;

/**
 * Writes a projected Secret volume the way the kubelet does: the files live in a timestamped
 * directory, `..data` points at it, and the visible names are symlinks through `..data`. An
 * update writes a new directory, points `..data_tmp` at it and renames that over `..data` (one
 * atomic rename), then removes the old directory.
 */
function kubeletWrite(files: Record<string, string>): void {
  const previous = generation;
  generation++;
  const stamp = `..2026_11_26_00_00_0${generation}.000000000`;
  mkdirSync(join(dir, stamp));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, stamp, name), content);
  symlinkSync(stamp, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of Object.keys(files)) {
    try {
      symlinkSync(join('..data', name), join(dir, name));
    } catch {
      // Already linked through ..data: the kubelet links each name once.
    }
  }
  if (previous > 0) rmSync(join(dir, `..2026_11_26_00_00_0${previous}.000000000`), { recursive: true });
}

const serverCert = (validityDays: number) =>
  issueCertificate(pki.ca, {
    commonName: 'localhost',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
    validityDays,
  });
const volume = (pair: CertificateAndKey) => ({
  'tls.crt': pair.certPem,
  'tls.key': pair.keyPem,
  'ca.crt': pki.ca.certPem,
});

const open = () =>
  openMaterials({ kubeConfig: undefined, namespace: 'argocd', logger }, async (set) => ({
    pair: await set.open(
      keyPairSpec('the server certificate', {
        kind: 'server',
        files: { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') },
        required: true,
        fileOptions: '--tls-cert',
      }),
    ),
    clientCa: await set.open(
      caBundleSpec('the client CA', {
        kind: 'client-ca',
        file: join(dir, 'ca.crt'),
        required: true,
        fileOptions: '--root-ca-path',
      }),
    ),
  }));

/** The serial number of the certificate a new connection is served. */
const servedSerial = () =>
  new Promise<string>((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca: pki.ca.certPem, servername: 'localhost' }, () => {
      resolve(s.getPeerCertificate().serialNumber);
      s.destroy();
    });
    s.on('error', reject);
  });

const gauge = async (name: string, kind: string) => {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find(
    (v) => v.labels.service === 'test-service' && v.labels.kind === kind,
  )?.value;
};
const nextChange = <T>(m: Material<T>) => new Promise<T>((resolve) => m.onChange(resolve));
const nextFailure = (m: Material<unknown>) => new Promise<unknown>((resolve) => m.onFailure(resolve));
const notAfter = (pair: CertificateAndKey) =>
  Math.floor(Date.parse(new X509Certificate(pair.certPem).validTo) / 1000);

beforeAll(async () => {
  pki = await createTestPki();
  dir = makeTempDir('kubelet-volume-');
  kubeletWrite(volume(await serverCert(30)));
  material = await open();
  material.observe(registry, 'test-service');
  server = createServer({ ...currentListenerTls(material) }, (s) => s.end());
  followListenerMaterial(material, { apply: (tls) => server.setSecureContext(tls), logger });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  material?.stop();
  server?.close();
});

it('serves a certificate swapped in by the kubelet to new connections, and the expiry gauge follows', async () => {
  const before = await servedSerial();
  const expiryBefore = await gauge('pullplane_certificate_expiry_timestamp_seconds', 'server');
  expect(expiryBefore).toBeGreaterThan(Date.now() / 1000 + 29 * 86_400);

  const next = await serverCert(90);
  const changed = nextChange(material.pair);
  kubeletWrite(volume(next));
  await changed;

  const after = await servedSerial();
  expect(after).not.toBe(before);
  expect(after.toLowerCase()).toBe(new X509Certificate(next.certPem).serialNumber.toLowerCase());
  expect(await gauge('pullplane_certificate_expiry_timestamp_seconds', 'server')).toBe(notAfter(next));
  expect(await gauge('pullplane_certificate_expiry_timestamp_seconds', 'client-ca')).toBeGreaterThan(
    Date.now() / 1000,
  );
});

it('keeps serving the current certificate when the swapped-in one does not parse, and counts the failure', async () => {
  const before = await servedSerial();
  const expiry = await gauge('pullplane_certificate_expiry_timestamp_seconds', 'server');
  const failures = (await gauge('pullplane_material_reload_failures_total', 'server')) ?? 0;
  const failed = nextFailure(material.pair);
  kubeletWrite({ 'tls.crt': 'not a certificate', 'tls.key': 'not a key', 'ca.crt': pki.ca.certPem });
  await failed;
  expect(await servedSerial()).toBe(before);
  expect(await gauge('pullplane_certificate_expiry_timestamp_seconds', 'server')).toBe(expiry);
  expect(await gauge('pullplane_material_reload_failures_total', 'server')).toBe(failures + 1);

  // A good one after the bad one is taken again.
  const next = await serverCert(120);
  const changed = nextChange(material.pair);
  kubeletWrite(volume(next));
  await changed;
  expect(await servedSerial()).not.toBe(before);
  expect(await gauge('pullplane_certificate_expiry_timestamp_seconds', 'server')).toBe(notAfter(next));
});
