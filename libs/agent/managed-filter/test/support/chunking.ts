import { expect } from 'vitest';

/** Small deterministic PRNG so random chunkings are reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Chunking {
  name: string;
  chunks: Buffer[];
}

/** The whole input, byte by byte, and several seeded random splittings (small and large pieces). */
export function chunkings(input: Buffer, seeds: number[] = [1, 2, 3, 42, 1337]): Chunking[] {
  const out: Chunking[] = [{ name: 'whole', chunks: [input] }];
  const bytes: Buffer[] = [];
  for (let i = 0; i < input.length; i++) bytes.push(input.subarray(i, i + 1));
  out.push({ name: 'byte-by-byte', chunks: bytes });
  for (const seed of seeds) {
    const rnd = mulberry32(seed);
    const max = seed % 2 === 0 ? 7 : 300;
    const chunks: Buffer[] = [];
    for (let i = 0; i < input.length; ) {
      const n = 1 + Math.floor(rnd() * max);
      // Copy, so no test accidentally depends on chunks sharing one backing buffer.
      chunks.push(Buffer.from(input.subarray(i, i + n)));
      i += n;
    }
    out.push({ name: `random-${seed}`, chunks });
  }
  return out;
}

export async function* fromChunks(chunks: Iterable<Buffer | string>): AsyncGenerator<Buffer | string> {
  for (const c of chunks) yield c;
}

export async function collect(gen: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of gen) parts.push(b);
  return Buffer.concat(parts);
}

/**
 * Runs a filter over every chunking of the input (a fresh filter each time, built by `run`)
 * and asserts they all produce the same bytes; returns that output as a string.
 */
export async function runAllChunkings(
  input: string | Buffer,
  run: (source: AsyncIterable<Buffer | string>) => AsyncIterable<Buffer>,
): Promise<string> {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  let reference: Buffer | undefined;
  for (const c of chunkings(buf)) {
    const out = await collect(run(fromChunks(c.chunks)));
    if (reference === undefined) reference = out;
    else expect(out.toString('utf8'), `chunking ${c.name}`).toBe(reference.toString('utf8'));
  }
  return reference!.toString('utf8');
}

/** A source the test feeds by hand, to observe exactly when the filter emits. */
export class ManualSource implements AsyncIterable<Buffer> {
  private queue: Array<Buffer | null> = [];
  private waiter: ((v: Buffer | null) => void) | undefined;
  private starving: Array<() => void> = [];

  push(chunk: string | Buffer | null): void {
    const v = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(v);
    } else this.queue.push(v);
  }

  /**
   * Resolves once the reader has taken everything pushed and asks for more: the event that
   * shows a filter has done all it can with its input so far.
   */
  starved(): Promise<void> {
    if (this.waiter) return Promise.resolve();
    return new Promise((r) => this.starving.push(r));
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const next =
        this.queue.length > 0
          ? this.queue.shift()!
          : await new Promise<Buffer | null>((r) => {
              this.waiter = r;
              for (const s of this.starving.splice(0)) s();
            });
      if (next === null) return;
      yield next;
    }
  }
}

/**
 * Resolves with the filter's next value, or 'pending' when it has asked its source for more
 * input without emitting one (the filter is starved, so nothing can come before the next push).
 */
export async function nextOrPending<T>(
  it: AsyncIterator<T>,
  pending: { p?: Promise<IteratorResult<T>> | undefined },
  source: ManualSource,
) {
  pending.p ??= it.next();
  const p = pending.p;
  const starved = source.starved().then(() => Promise.race([p, Promise.resolve('pending' as const)]));
  const res = await Promise.race([p, starved]);
  if (res !== 'pending') pending.p = undefined;
  return res;
}
