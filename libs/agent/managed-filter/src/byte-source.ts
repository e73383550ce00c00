/** Upstream response bytes: a Node Readable, a web ReadableStream in Node, or any async iterable of chunks. */
export type ByteSource = AsyncIterable<Uint8Array | string>;

export interface FilterOptions {
  /** Largest single list item, table row or watch event held in memory (default 16 MiB). */
  maxItemBytes?: number;
  /** Output is batched up to this many bytes before it is yielded (default 64 KiB; watches never wait). */
  flushBytes?: number;
}

export const DEFAULT_MAX_ITEM_BYTES = 16 * 1024 * 1024;
export const DEFAULT_FLUSH_BYTES = 64 * 1024;

export function toBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Collects output pieces so many small items leave as one chunk. */
export class OutputBatch {
  private parts: Buffer[] = [];
  size = 0;

  push(b: Buffer): void {
    if (b.length === 0) return;
    this.parts.push(b);
    this.size += b.length;
  }

  take(): Buffer {
    const out = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    return out;
  }
}
