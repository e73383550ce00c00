import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { createMemoryBus } from '@pullplane/bus';
import { createTestPki, makeTempDir } from '@pullplane/testing';
import { keyPairSpec, openMaterial, tlsProtocolSettings } from '@pullplane/tls-material';
import pino from 'pino';
import { expect, it } from 'vitest';
import { createHttpServer, serveFront } from '../src/index.js';

const logger = pino({ level: 'silent' });

/** The certificate a new TLS connection to `port` is shown, and the version it agreed. */
function presented(port: number): Promise<{ fingerprint: string; version: string | null }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve({ fingerprint: socket.getPeerCertificate().fingerprint256, version: socket.getProtocol() });
      socket.end();
    });
    socket.once('error', reject);
  });
}

it("starts with the listener's certificate and protocol, takes a rotated one when the bus asks its service to reload, and stops following, its material and its revocations when it closes", async () => {
  const pki = await createTestPki();
  const dir = makeTempDir('served-front-');
  const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
  const write = async () => {
    const pair = await pki.serverCert();
    writeFileSync(files.cert, pair.certPem);
    writeFileSync(files.key, pair.keyPem);
    return new X509Certificate(pair.certPem).fingerprint256;
  };
  const first = await write();
  const pair = await openMaterial(
    keyPairSpec('the listener pair', {
      kind: 'server',
      files,
      required: true,
      fileOptions: '--tls-cert-path',
    }),
    logger,
  );
  let reloads = 0;
  let materialStops = 0;
  let revocationStops = 0;
  const bus = createMemoryBus();
  const protocol = tlsProtocolSettings({
    tlsMinVersion: 'tls1.2',
    tlsMaxVersion: 'tls1.2',
    tlsCiphersuites: [],
  }).settings;
  const served = serveFront(
    (listenerTls) =>
      createHttpServer({
        name: 'test front',
        logger,
        host: '127.0.0.1',
        port: 0,
        tls: listenerTls,
        onRequest: (_req, res) => res.end(),
        onUpgrade: (_req, socket) => socket.destroy(),
      }),
    {
      service: 'resource-proxy',
      bus,
      logger,
      material: {
        serverTls: pair,
        clientCa: undefined,
        async reload() {
          reloads++;
          await pair.reload();
        },
        observe: () => undefined,
        stop: () => {
          materialStops++;
          pair.stop();
        },
      },
      revocations: { stop: () => void revocationStops++ },
      protocol,
    },
  );
  await served.front.listen();
  const port = served.front.port;
  expect(await presented(port)).toEqual({ fingerprint: first, version: 'TLSv1.2' });

  const second = await write();
  // Another service's reload changes nothing; this one's does, for connections from then on.
  await bus.control.publish({ type: 'config-reload', service: 'redis-proxy' });
  await bus.control.publish({ type: 'config-reload', service: 'resource-proxy' });
  await expect.poll(async () => (await presented(port)).fingerprint).toBe(second);
  expect(reloads).toBe(1);

  await served.front.close(0);
  expect([materialStops, revocationStops]).toEqual([1, 1]);
  // A reload for every service reaches another follower, not the closed front.
  const other = new Promise<void>((r) => bus.control.subscribe(() => r()));
  await bus.control.publish({ type: 'config-reload' });
  await other;
  expect(reloads).toBe(1);
});
