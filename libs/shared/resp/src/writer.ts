/**
 * Growable output buffer for the encoder. Headers and small payloads are written into one
 * buffer; payloads at or above `zeroCopyMin` are passed through by reference, so a caller
 * that writes the chunks with writev never copies a large value.
 */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;
  private readonly chunks: Buffer[] = [];

  constructor(
    private readonly zeroCopyMin = Number.POSITIVE_INFINITY,
    initialSize = 256,
  ) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  /** Writes a string known to be ASCII (headers, numbers). */
  ascii(s: string): void {
    this.reserve(s.length);
    this.pos += this.buf.write(s, this.pos, 'latin1');
  }

  utf8(s: string): void {
    // Worst case is 3 bytes per UTF-16 unit; reserving that avoids measuring the string twice.
    this.reserve(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  bytes(b: Uint8Array): void {
    if (b.length >= this.zeroCopyMin) {
      this.flush();
      this.chunks.push(Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length));
      return;
    }
    this.reserve(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** All bytes written so far, as chunks in order. */
  chunkList(): Buffer[] {
    this.flush();
    return this.chunks;
  }

  /** All bytes written so far, as one buffer. */
  toBuffer(): Buffer {
    const chunks = this.chunkList();
    if (chunks.length === 1) return chunks[0]!;
    return chunks.length === 0 ? Buffer.alloc(0) : Buffer.concat(chunks);
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private flush(): void {
    if (this.pos === 0) return;
    this.chunks.push(this.buf.subarray(0, this.pos));
    // Keep writing into the unused tail rather than allocating a new buffer.
    this.buf = this.buf.subarray(this.pos);
    this.pos = 0;
  }
}
