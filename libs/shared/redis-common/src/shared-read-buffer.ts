import type { OnReadOpts, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/**
 * Socket reads through one buffer the process shares.
 *
 * A socket read the usual way costs Node a fresh 64 KiB allocation, shrunk to what arrived and
 * wrapped in a new Buffer, then a pass through a Readable stream's machinery before 'data' fires:
 * for a Redis command of a few dozen bytes that is most of what the proxy spends on it in user
 * space. Node's `onread` reads into a buffer given once and calls back with the byte count. Reads
 * run one at a time on the event loop and each callback is done with the buffer before the next
 * read, so one buffer serves every socket of the process. A chunk is copied out of it (a slice of
 * Node's buffer pool when small) because our consumers keep parts of a chunk after the callback:
 * a command's bytes wait in a batch until the end of the turn, a partial value in the decoder.
 */
const SHARED = Buffer.allocUnsafe(64 * 1024);

export type ChunkHandler = (chunk: Buffer) => void;

function copyOut(buffer: Buffer, length: number): Buffer {
  const chunk = Buffer.allocUnsafe(length);
  buffer.copy(chunk, 0, 0, length);
  return chunk;
}

/** `onread` for `net.connect`: every chunk the socket reads goes to `onChunk`; no 'data' events. */
export function sharedReadOption(onChunk: ChunkHandler): OnReadOpts {
  return sharedReads(() => onChunk);
}

/** `onread` handing each chunk to the current handler; none: the chunk is dropped uncopied. */
function sharedReads(current: () => ChunkHandler | undefined): OnReadOpts {
  return {
    buffer: SHARED,
    callback: (length, buffer) => {
      const onChunk = current();
      if (onChunk !== undefined) onChunk(copyOut(buffer as Buffer, length));
      // Not `false`: pausing stays the caller's decision (socket.pause()).
      return true;
    },
  };
}

/** How a socket's chunks reach the handler: through the shared buffer, or as 'data' events. */
export type ReadPath = 'shared-buffer' | 'data-events';

/** An accepted socket's reads (readAccepted). */
export interface AcceptedReads {
  readonly path: ReadPath;
  /**
   * Drops every chunk read from now on without handing it over (through the shared buffer, without
   * copying it): for a connection that is closing and reads only to see the client's FIN.
   */
  discard(): void;
}

interface OnreadSymbols {
  buffer: symbol;
  callback: symbol;
}
let symbols: OnreadSymbols | null | undefined;

/** The socket's private keys that `onread` sets; null where this Node.js has none by those names. */
function onreadSymbols(socket: Socket): OnreadSymbols | null {
  if (symbols !== undefined) return symbols;
  const own = Object.getOwnPropertySymbols(socket);
  const buffer = own.find((s) => s.description === 'kBuffer');
  const callback = own.find((s) => s.description === 'kBufferCb');
  symbols = buffer && callback ? { buffer, callback } : null;
  return symbols;
}

/**
 * Reads a socket that a server accepted (plain TCP) through the shared buffer.
 *
 * Node's servers take no `onread` (only a socket the process creates does), so this sets on the
 * accepted socket what the option would have set, through Node's own keys, and points its handle
 * at the buffer (`useUserBuffer`: what Node calls when the option is given). A 'data' listener
 * goes on first either way: if a Node.js release stops honouring those keys, chunks arrive there
 * and nothing is lost, only the saving. TLS sockets read the usual way (their handle decrypts).
 * Pausing and resuming keep working on either path (Node pauses a static-buffer socket by
 * stopping its handle's reads).
 */
export function readAccepted(socket: Socket, onChunk: ChunkHandler): AcceptedReads {
  let handler: ChunkHandler | undefined = onChunk;
  socket.on('data', (chunk: Buffer) => handler?.(chunk));
  const reads = (path: ReadPath): AcceptedReads => ({
    path,
    discard: () => {
      handler = undefined;
    },
  });
  if (socket instanceof TLSSocket) return reads('data-events');
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (buffer: Buffer) => void } })._handle;
  if (typeof handle?.useUserBuffer !== 'function') return reads('data-events');
  const keys = onreadSymbols(socket);
  if (keys === null) return reads('data-events');
  const fields = socket as unknown as Record<symbol, unknown>;
  const option = sharedReads(() => handler);
  fields[keys.buffer] = option.buffer;
  fields[keys.callback] = option.callback;
  handle.useUserBuffer(SHARED);
  return reads('shared-buffer');
}
