import type { Readable } from 'node:stream';

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
