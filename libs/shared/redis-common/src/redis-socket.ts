import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** How to reach a Redis server (the principal's, or an agent's local one). */
export interface RedisEndpoint {
  host: string;
  port: number;
  /** Password for `AUTH` (the default user). */
  password?: string;
  /** TLS towards the server; `ca` verifies it, `insecure` skips verification (development only). */
  tls?: { ca?: string | Buffer; insecure?: boolean; servername?: string };
}

/** Opens a TCP (or TLS) connection; 'connect' / 'secureConnect' are left to the caller. */
export function connectRedis(endpoint: RedisEndpoint): Socket {
  const socket = endpoint.tls
    ? tlsConnect({
        host: endpoint.host,
        port: endpoint.port,
        servername: endpoint.tls.servername ?? endpoint.host,
        rejectUnauthorized: !endpoint.tls.insecure,
        ...(endpoint.tls.ca ? { ca: endpoint.tls.ca } : {}),
      })
    : netConnect({ host: endpoint.host, port: endpoint.port });
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 30_000);
  return socket;
}

/** The event that means "ready to talk" for the socket connectRedis returned. */
export function readyEvent(endpoint: RedisEndpoint): 'connect' | 'secureConnect' {
  return endpoint.tls ? 'secureConnect' : 'connect';
}
