import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { type ListenerTls, listenerSecureContext } from '@pullplane/tls-material';
import type { Logger } from 'pino';

export interface HttpServerOptions {
  /** In log lines: "resource proxy", "extension proxy". */
  name: string;
  logger: Logger;
  host: string;
  port: number;
  /**
   * TLS for callers; client certificates are requested and verified against `ca` (without one,
   * no certificate is trusted: callers use tokens or a mesh identity).
   */
  tls?: ListenerTls | undefined;
  onRequest(req: IncomingMessage, res: ServerResponse): void;
  onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
}

/** A caller-facing listener: what both proxies' servers have in common. */
export interface HttpServer {
  /** The port listened on (0 before `listen`). */
  readonly port: number;
  /** New certificate, key or CA for connections from now on (rotation without a restart). */
  reloadTls(material: Pick<ListenerTls, 'cert' | 'key' | 'ca'>): void;
  listen(): Promise<void>;
  /** Stops accepting; in-flight exchanges (watches, event streams, WebSockets) get `graceMs`, then are cut. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The node:http(s) server under a front. Long-lived exchanges are the point of a proxy, so
 * there is no server-side request timeout; a request line and headers must arrive within a
 * minute; a malformed request gets a bare 400 and its connection closed.
 */
export function createHttpServer(o: HttpServerOptions): HttpServer {
  const log = o.logger;
  const server = o.tls
    ? https.createServer(
        { ...listenerSecureContext(o.tls), requestCert: true, rejectUnauthorized: false },
        o.onRequest,
      )
    : http.createServer(o.onRequest);
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
  server.on('upgrade', o.onUpgrade);
  server.on('clientError', (err: Error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    log.debug({ err: err.message }, 'malformed HTTP request');
  });
  const tls = o.tls;
  return {
    get port() {
      return (server.address() as AddressInfo | null)?.port ?? 0;
    },
    reloadTls(material) {
      if (!tls) throw new Error(`the ${o.name} serves plaintext: no TLS to reload`);
      (server as https.Server).setSecureContext(listenerSecureContext({ ...tls, ...material }));
      log.info(`${o.name} TLS material reloaded`);
    },
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host, () => {
          server.off('error', reject);
          log.info(
            { host: o.host, port: (server.address() as AddressInfo).port, tls: Boolean(tls) },
            `${o.name} listening`,
          );
          resolve();
        });
      });
    },
    close(graceMs = 5_000) {
      return new Promise((resolve) => {
        const cut = setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, graceMs);
        cut.unref();
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}
