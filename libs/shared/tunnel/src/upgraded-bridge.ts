import type { Duplex } from 'node:stream';
import { TunnelErrorCode } from './errors.js';
import type { TunnelStream } from './logical-stream.js';

export interface UpgradedBridgeOptions {
  /** Bytes the socket side already read past the upgrade (Node's `head`): sent first. */
  head?: Uint8Array;
  /** Bytes moved each way, when the bridge ends. */
  onClose?: (stats: { bytesIn: number; bytesOut: number; error?: Error }) => void;
}

/**
 * Joins an upgraded connection (a WebSocket or any protocol switched to after a 101) to a
 * tunnel stream: bytes flow both ways as Data under the stream's credit, so a slow reader on
 * either side stalls only this stream. A half-close is passed on as one (`end` becomes End
 * and End becomes `end`); a failure on either side tears down both. Used by the proxy (client
 * socket ↔ tunnel) and by the agent (tunnel ↔ backend socket) alike.
 *
 * `bytesIn` counts socket → tunnel, `bytesOut` tunnel → socket.
 */
export function bridgeUpgraded(
  socket: Duplex,
  stream: TunnelStream | (Duplex & { reset?: TunnelStream['reset'] }),
  opts: UpgradedBridgeOptions = {},
): void {
  let bytesIn = 0;
  let bytesOut = 0;
  let done = false;
  const finish = (error?: Error) => {
    if (done) return;
    done = true;
    opts.onClose?.({ bytesIn, bytesOut, ...(error ? { error } : {}) });
  };
  socket.on('data', (c: Buffer) => {
    bytesIn += c.length;
  });
  stream.on('data', (c: Buffer) => {
    bytesOut += c.length;
  });
  if (opts.head && opts.head.byteLength > 0) {
    bytesIn += opts.head.byteLength;
    stream.write(Buffer.from(opts.head.buffer, opts.head.byteOffset, opts.head.byteLength));
  }
  // pipe() carries backpressure both ways and ends the destination when the source ends.
  socket.pipe(stream);
  stream.pipe(socket);
  let closed = 0;
  const closedOne = () => {
    closed++;
    if (closed === 2) finish();
  };
  let socketEnded = false;
  socket.once('end', () => {
    socketEnded = true;
  });
  socket.once('close', () => {
    if (!stream.destroyed) {
      if (!socketEnded) {
        // Cut without a clean end: the far side must not wait for an End that never comes.
        if (typeof stream.reset === 'function') stream.reset(TunnelErrorCode.CANCELLED, 'connection closed');
        else stream.destroy();
      } else if (!stream.readableEnded) {
        // Ended cleanly: pipe() sends End once the buffered bytes have credit; whatever the far
        // side still sends has nowhere to go and is drained.
        stream.unpipe(socket);
        stream.resume();
      }
    }
    closedOne();
  });
  stream.once('close', () => {
    const err = stream.errored ?? undefined;
    if (err) {
      finish(err);
      socket.destroy();
    } else if (!socket.destroyed && !socket.writableEnded) socket.end();
    closedOne();
  });
  socket.on('error', (err: Error) => {
    finish(err);
    if (!stream.destroyed) {
      if (typeof stream.reset === 'function') stream.reset(TunnelErrorCode.CANCELLED, err.message);
      else stream.destroy(err);
    }
  });
}
