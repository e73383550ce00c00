import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { FrameClient, type TunnelCredentials } from '@pullplane/grpc-frames';
import { createTestPki, makeTempDir } from '@pullplane/testing';
import { afterAll, expect, it } from 'vitest';
import { gatewayCredentials } from '../src/index.js';

const pki = await createTestPki();
const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** An HTTP/2 server requiring client certificates that answers any call with the caller's CN as its status message. */
async function startWhoServer(): Promise<number> {
  const pair = await pki.serverCert();
  const server = http2.createSecureServer({
    ca: pki.ca.certPem,
    cert: pair.certPem,
    key: pair.keyPem,
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('stream', (stream) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const cn = socket?.getPeerCertificate().subject?.CN ?? '';
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0', 'grpc-message': String(cn) },
      { endStream: true },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(r)));
  return (server.address() as { port: number }).port;
}

/** Asks over a new connection: a connection keeps its certificate. */
async function whoAmI(port: number, creds: TunnelCredentials): Promise<string> {
  const client = new FrameClient({
    target: `127.0.0.1:${port}`,
    credentials: creds,
    serverNameOverride: 'localhost',
  });
  try {
    return await new Promise<string>((resolve, reject) =>
      client.call('/pullplane.test.Echo/Who', undefined, {
        onFrame: () => reject(new Error('a frame from the who server')),
        onEnd: (end) => (end.code === 0 ? resolve(end.details) : reject(new Error(end.details))),
      }),
    );
  } finally {
    client.destroy();
  }
}

it('re-reads a rotated proxy certificate: new connections present the new one', async () => {
  const port = await startWhoServer();
  const dir = makeTempDir('gateway-creds-');
  const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key'), ca: join(dir, 'ca.crt') };
  const install = async (cn: string) => {
    const pair = await pki.proxyCert(cn);
    writeFileSync(files.key, pair.keyPem);
    writeFileSync(files.cert, pair.certPem);
  };
  writeFileSync(files.ca, pki.ca.certPem);
  await install('proxy-before');
  const creds = gatewayCredentials(
    {
      gatewayPlaintext: false,
      gatewayCertPath: files.cert,
      gatewayKeyPath: files.key,
      gatewayCaPath: files.ca,
    },
    100,
  );
  expect(await whoAmI(port, creds)).toBe('proxy-before');
  await install('proxy-after');
  await expect.poll(() => whoAmI(port, creds), { timeout: 10_000 }).toBe('proxy-after');
});

it('fails at startup, naming the file, when the key cannot be read', () => {
  const dir = makeTempDir('gateway-creds-');
  writeFileSync(join(dir, 'ca.crt'), pki.ca.certPem);
  writeFileSync(join(dir, 'tls.crt'), pki.ca.certPem);
  expect(() =>
    gatewayCredentials({
      gatewayPlaintext: false,
      gatewayCertPath: join(dir, 'tls.crt'),
      gatewayKeyPath: join(dir, 'missing.key'),
      gatewayCaPath: join(dir, 'ca.crt'),
    }),
  ).toThrow(/missing\.key/);
});
