import type { Readable } from 'node:stream';
import type { TunnelStream } from './logical-stream.js';

/**
 * Takes every byte a stream holds right now, without waiting for 'data' events of later ticks:
 * a relay sends what came with a response head in the same write as the head.
 */
export function readBuffered(stream: Readable): Buffer {
  const chunks: Buffer[] = [];
  for (;;) {
    const c = stream.read() as Buffer | null;
    if (c === null) break;
    chunks.push(c);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * `readBuffered`, and whether that was the whole body: the peer's end has been read too, so
 * a relay can send head, body and end at once (a small response usually arrives that way).
 */
export function readBufferedBody(stream: TunnelStream): { body: Buffer; complete: boolean } {
  const body = readBuffered(stream);
  return { body, complete: stream.inputEnded && stream.readableLength === 0 };
}
