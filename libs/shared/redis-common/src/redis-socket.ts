import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { type ChunkHandler, sharedReadOption } from './shared-read-buffer.js';

/** How to reach a Redis server (the principal's, or an agent's local one). */
export interface RedisEndpoint {
  host: string;
  port: number;
  /** Password for `AUTH` (the default user). */
  password?: string;
  /** TLS towards the server; `ca` verifies it, `insecure` skips verification (development only). */
  tls?: { ca?: string | Buffer; insecure?: boolean; servername?: string };
}

/**
 * Opens a TCP (or TLS) connection whose every chunk read goes to `onChunk` (over TCP through the
 * process's shared read buffer, see shared-read-buffer.ts); 'connect' / 'secureConnect' are left
 * to the caller.
 */
export function connectRedis(endpoint: RedisEndpoint, onChunk: ChunkHandler): Socket {
  const socket = endpoint.tls
    ? tlsConnect({
        host: endpoint.host,
        port: endpoint.port,
        servername: endpoint.tls.servername ?? endpoint.host,
        rejectUnauthorized: !endpoint.tls.insecure,
        ...(endpoint.tls.ca ? { ca: endpoint.tls.ca } : {}),
      })
    : netConnect({ host: endpoint.host, port: endpoint.port, onread: sharedReadOption(onChunk) });
  if (endpoint.tls) socket.on('data', onChunk);
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 30_000);
  return socket;
}

/** The event that means "ready to talk" for the socket connectRedis returned. */
export function readyEvent(endpoint: RedisEndpoint): 'connect' | 'secureConnect' {
  return endpoint.tls ? 'secureConnect' : 'connect';
}
