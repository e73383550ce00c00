import type http2 from 'node:http2';
import { type Frame, grpcMessagePieces } from '@pullplane/proto';

/**
 * Writes one Frame as a gRPC message on an HTTP/2 stream, its pieces corked into one write: the
 * prefix and framing in one buffer, relayed payloads as the views they came in. `done` runs once
 * the message is handed on (at once, in a microtask, when the stream can take nothing more).
 * Returns false when the stream wants a drain first.
 */
export function writeGrpcMessage(stream: http2.Http2Stream, message: Frame, done?: () => void): boolean {
  if (stream.destroyed || stream.writableEnded) {
    if (done) queueMicrotask(done);
    return false;
  }
  const pieces = grpcMessagePieces(message);
  const last = pieces.length - 1;
  if (last > 0) stream.cork();
  let ok = true;
  for (let i = 0; i <= last; i++)
    ok = i === last && done ? stream.write(pieces[i], () => done()) : stream.write(pieces[i]);
  if (last > 0) stream.uncork();
  return ok;
}
