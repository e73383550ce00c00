import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ChannelCredentials,
  Client,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { createTestPki } from '@pullplane/testing';
import { afterAll, expect, it } from 'vitest';
import { gatewayCredentials } from '../src/index.js';

const pki = await createTestPki();
const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

const bytes = (b: Buffer) => b;
const WHO = '/pullplane.test.Echo/Who';

/** A gRPC server requiring client certificates that answers with the caller's CN. */
async function startWhoServer(): Promise<number> {
  const server = new Server();
  server.addService(
    {
      who: {
        path: WHO,
        requestStream: false,
        responseStream: false,
        requestSerialize: bytes,
        requestDeserialize: bytes,
        responseSerialize: bytes,
        responseDeserialize: bytes,
      },
    },
    {
      who: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) =>
        cb(null, Buffer.from(String(call.getAuthContext().sslPeerCertificate?.subject.CN ?? ''))),
    },
  );
  const pair = await pki.serverCert();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      ServerCredentials.createSsl(
        Buffer.from(pki.ca.certPem),
        [{ cert_chain: Buffer.from(pair.certPem), private_key: Buffer.from(pair.keyPem) }],
        true,
      ),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  closers.push(() => new Promise((r) => server.tryShutdown(r)));
  return port;
}

/** Asks over a new connection (not the shared subchannel pool): a connection keeps its certificate. */
async function whoAmI(port: number, creds: ChannelCredentials): Promise<string> {
  const client = new Client(`127.0.0.1:${port}`, creds, { 'grpc.use_local_subchannel_pool': 1 });
  try {
    return await new Promise<string>((resolve, reject) =>
      client.makeUnaryRequest(WHO, bytes, bytes, Buffer.alloc(0), (err, r) =>
        err ? reject(err) : resolve(String(r)),
      ),
    );
  } finally {
    client.close();
  }
}

it('re-reads a rotated proxy certificate: new connections present the new one', async () => {
  const port = await startWhoServer();
  const dir = mkdtempSync(join(tmpdir(), 'gateway-creds-'));
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
  const dir = mkdtempSync(join(tmpdir(), 'gateway-creds-'));
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
