import net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { AuthOutcome } from './caller-auth.js';
import { remoteOf } from './frame-call.js';
import type { FrameServer } from './frame-server.js';

export interface ListenerTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** CA bundle that client certificates must chain to. */
  ca?: string | Buffer;
  /** Reject connections without a valid client certificate (mTLS). */
  requireClientCert: boolean;
  /**
   * Decides once per connection who the client is (its certificate cannot change on an
   * established connection), so per-call authentication need not parse it again.
   */
  authorize?: (peer: tls.PeerCertificate) => AuthOutcome;
  /** TLS versions and cipher suites (default: TLS 1.2 and up, Node's suites). */
  protocol?: { minVersion: tls.SecureVersion; maxVersion?: tls.SecureVersion; ciphers?: string };
}

export interface GrpcListenerOptions {
  name: string;
  host: string;
  port: number;
  tls?: ListenerTls;
  logger: Logger;
}

export interface GrpcListener {
  readonly port: number;
  readonly address: string;
  /**
   * What `tls.authorize` decided for the live connection whose peer is `remote` (`host:port`,
   * as a call reports it); undefined for unknown, closed or plaintext connections.
   */
  connectionIdentity(remote: string): AuthOutcome | undefined;
  /** Refuses new connections; established ones (agent tunnels) carry on. */
  stopAccepting(): void;
  /** New certificate, key or CA for connections from now on (rotation without a restart). */
  reloadTls(material: Pick<ListenerTls, 'cert' | 'key' | 'ca'>): void;
  /** Stops accepting; open HTTP/2 sessions get `graceMs` before they are cut. */
  close(graceMs: number): Promise<void>;
}

/**
 * Accepts TCP/TLS and hands authorised connections to the listener's gRPC server. Owning the
 * TLS handshake lets us log why a client certificate was refused (expired, unknown CA, none);
 * calls still see the authorised TLSSocket and its peer certificate.
 */
export async function startGrpcListener(
  server: FrameServer,
  opts: GrpcListenerOptions,
): Promise<GrpcListener> {
  const log = opts.logger.child({ listener: opts.name });
  // Keyed by the peer address calls on the connection report: the listener owns the accept
  // loop, so a live TLS connection is the only one with that address.
  const identities = new Map<string, AuthOutcome>();
  let netServer: net.Server;
  let secure: tls.Server | undefined;
  if (opts.tls) {
    const t = opts.tls;
    const tlsServer = tls.createServer({
      noDelay: true,
      cert: t.cert,
      key: t.key,
      ...(t.ca ? { ca: t.ca } : {}),
      requestCert: t.requireClientCert,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
      ...protocolOf(t),
    });
    tlsServer.on('secureConnection', (socket: tls.TLSSocket) => {
      if (t.requireClientCert && !socket.authorized) {
        const peer = socket.getPeerCertificate();
        const presented = peer && Object.keys(peer).length > 0;
        log.warn(
          {
            remote: `${socket.remoteAddress}:${socket.remotePort}`,
            reason: presented ? String(socket.authorizationError) : 'no client certificate presented',
            subject: presented ? peer.subject?.CN : undefined,
            validTo: presented ? peer.valid_to : undefined,
          },
          'rejected TLS client: client certificate not accepted',
        );
        socket.destroy();
        return;
      }
      if (t.authorize) {
        const outcome = t.authorize(socket.getPeerCertificate());
        if (!outcome.ok) {
          log.warn(
            {
              remote: `${socket.remoteAddress}:${socket.remotePort}`,
              code: outcome.code,
              reason: outcome.reason,
            },
            'rejected TLS client: identity not allowed',
          );
          socket.destroy();
          return;
        }
        const key = remoteOf(socket);
        identities.set(key, outcome);
        socket.once('close', () => identities.delete(key));
      }
      server.accept(socket);
    });
    tlsServer.on('tlsClientError', (err, socket) => {
      log.warn(
        { remote: `${socket.remoteAddress}:${socket.remotePort}`, reason: err.message },
        'TLS handshake failed',
      );
    });
    netServer = tlsServer;
    secure = tlsServer;
  } else {
    // Small frames (heads, window updates) must not wait for Nagle's algorithm.
    netServer = net.createServer({ noDelay: true }, (socket) => server.accept(socket));
  }
  netServer.on('error', (err) => log.error({ err: err.message }, 'listener error'));
  await new Promise<void>((resolve, reject) => {
    netServer.once('error', reject);
    netServer.listen(opts.port, opts.host, () => {
      netServer.off('error', reject);
      resolve();
    });
  });
  const addr = netServer.address() as net.AddressInfo;
  log.info({ host: opts.host, port: addr.port, tls: Boolean(opts.tls) }, 'listening');
  return {
    port: addr.port,
    address: `${opts.host}:${addr.port}`,
    connectionIdentity: (remote) => identities.get(remote),
    reloadTls(material) {
      if (!secure) throw new Error(`listener ${opts.name} has no TLS to reload`);
      secure.setSecureContext({
        cert: material.cert,
        key: material.key,
        ...(material.ca ? { ca: material.ca } : {}),
        ...protocolOf(opts.tls!),
      });
      log.info('TLS material reloaded');
    },
    stopAccepting() {
      if (netServer.listening) netServer.close();
    },
    async close(graceMs) {
      await new Promise<void>((resolve) => {
        if (netServer.listening) netServer.close(() => resolve());
        server.drain();
        setTimeout(() => {
          server.destroy();
          resolve();
        }, graceMs + 50).unref();
      });
    },
  };
}

function protocolOf(t: ListenerTls): tls.SecureContextOptions {
  const p = t.protocol;
  if (!p) return { minVersion: 'TLSv1.2' };
  return {
    minVersion: p.minVersion,
    ...(p.maxVersion ? { maxVersion: p.maxVersion } : {}),
    ...(p.ciphers ? { ciphers: p.ciphers } : {}),
  };
}
