import { connect, createServer, type SecureContextOptions, type TLSSocket } from 'node:tls';
import { createTestPki } from '@pullplane/testing';
import { afterAll, expect, it } from 'vitest';
import { listenerSecureContext } from '../src/index.js';

const closers: Array<() => void> = [];
afterAll(() => {
  for (const c of closers) c();
});

const pki = await createTestPki();
const serverPair = await pki.serverCert();
const clientPair = await pki.clientCert('caller');

/** Connects with a client certificate over TLS 1.2 and asks to renegotiate: the outcome. */
async function renegotiateAgainst(context: SecureContextOptions): Promise<string> {
  const server = createServer({ ...context, requestCert: true, rejectUnauthorized: true }, (s) => {
    s.on('error', () => undefined);
    // The renegotiation handshake is processed as the server reads.
    s.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => server.close());
  const port = (server.address() as { port: number }).port;
  const socket: TLSSocket = connect({
    port,
    host: '127.0.0.1',
    ca: pki.ca.certPem,
    cert: clientPair.certPem,
    key: clientPair.keyPem,
    servername: 'localhost',
    maxVersion: 'TLSv1.2',
  });
  closers.push(() => socket.destroy());
  socket.resume();
  const outcome = new Promise<string>((resolve) => {
    // A refusal arrives as the server's alert, an error on the connection (no callback).
    socket.once('error', (err) => resolve(`refused: ${err.message}`));
    socket.once('close', () => resolve('closed'));
    socket.once('secureConnect', () => {
      socket.renegotiate({ rejectUnauthorized: true }, (err) =>
        resolve(err ? `refused: ${err.message}` : 'renegotiated'),
      );
      // The renegotiation handshake moves with the next record.
      socket.write('x');
    });
  });
  return outcome;
}

const tls = { cert: serverPair.certPem, key: serverPair.keyPem, ca: pki.ca.certPem };

it('refuses renegotiation, so the certificate of the handshake is the caller for the whole connection', async () => {
  expect(await renegotiateAgainst(listenerSecureContext(tls))).toMatch(/^refused: .*no renegotiation/);
  // The same listener without the option renegotiates: the check above can tell them apart.
  const { secureOptions: _dropped, ...permissive } = listenerSecureContext(tls);
  expect(await renegotiateAgainst(permissive)).toBe('renegotiated');
});

it('trusts no client certificate without a CA (not the public roots) and defaults to TLS 1.2 and up', () => {
  const context = listenerSecureContext({ cert: tls.cert, key: tls.key });
  expect(context.ca).toEqual([]);
  expect(context.minVersion).toBe('TLSv1.2');
  expect(
    listenerSecureContext({ ...tls, protocol: { minVersion: 'TLSv1.3', ciphers: 'TLS_AES_128_GCM_SHA256' } }),
  ).toMatchObject({ minVersion: 'TLSv1.3', ciphers: 'TLS_AES_128_GCM_SHA256' });
});
