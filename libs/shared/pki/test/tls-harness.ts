import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';

export interface HandshakeOutcome {
  /** Subject CN the server saw, when it accepted the client certificate. */
  serverSawCn?: string;
  /** OpenSSL verification code for a client certificate the server refused. */
  serverRejected?: string;
  serverError?: string;
  clientError?: string;
  clientAuthorized?: boolean;
}

export interface HandshakeOptions {
  server: { certPem: string; keyPem: string; caPem: string; requestCert?: boolean };
  client: { caPem: string; certPem?: string; keyPem?: string; host: string; servername?: string };
}

/**
 * Runs one real TLS handshake over loopback and reports what each side concluded. The
 * server writes a byte after accepting, so a client only counts as accepted once it
 * reads it (in TLS 1.3 the client finishes before the server judges its certificate).
 */
export async function handshake(options: HandshakeOptions): Promise<HandshakeOutcome> {
  const outcome: HandshakeOutcome = {};
  const requestCert = options.server.requestCert ?? true;
  const server = tls.createServer({
    cert: options.server.certPem,
    key: options.server.keyPem,
    ca: [options.server.caPem],
    requestCert,
    // Judged below instead, so the test can see why a client certificate was refused.
    rejectUnauthorized: false,
  });
  server.on('secureConnection', (socket) => {
    if (requestCert && !socket.authorized) {
      outcome.serverRejected = String(socket.authorizationError);
      socket.destroy();
      return;
    }
    const cn = socket.getPeerCertificate().subject?.CN;
    if (typeof cn === 'string') outcome.serverSawCn = cn;
    socket.end('ok');
  });
  server.on('tlsClientError', (err) => {
    outcome.serverError = (err as NodeJS.ErrnoException).code ?? err.message;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    await new Promise<void>((resolve) => {
      const socket = tls.connect({
        host: options.client.host,
        port,
        ca: [options.client.caPem],
        ...(options.client.servername === undefined ? {} : { servername: options.client.servername }),
        ...(options.client.certPem ? { cert: options.client.certPem, key: options.client.keyPem } : {}),
      });
      let received = '';
      socket.on('secureConnect', () => {
        outcome.clientAuthorized = socket.authorized;
      });
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
      });
      socket.on('error', (err: NodeJS.ErrnoException) => {
        outcome.clientError = err.code ?? err.message;
      });
      socket.on('close', () => {
        if (received !== 'ok' && outcome.clientError === undefined) outcome.clientError = 'CLOSED';
        resolve();
      });
    });
  } finally {
    server.close();
  }
  // tlsClientError can trail the client's close by a tick.
  await new Promise((r) => setImmediate(r));
  return outcome;
}
