/** mulberry32: tiny, seeded, deterministic; plenty for fuzzing inputs and splittings. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function int(random: () => number, max: number): number {
  return Math.floor(random() * max);
}

export function randomBuffer(random: () => number, length: number): Buffer {
  const b = Buffer.alloc(length);
  for (let i = 0; i < length; i++) b[i] = int(random, 256);
  return b;
}

export interface Chunking {
  name: string;
  chunks: Buffer[];
}

/** The whole input, byte by byte, and seeded random splittings (small and large pieces). */
export function chunkings(input: Buffer, seeds: number[] = [1, 2, 3, 42]): Chunking[] {
  const out: Chunking[] = [{ name: 'whole', chunks: [input] }];
  const bytes: Buffer[] = [];
  for (let i = 0; i < input.length; i++) bytes.push(input.subarray(i, i + 1));
  out.push({ name: 'byte-by-byte', chunks: bytes });
  for (const seed of seeds) out.push({ name: `random-${seed}`, chunks: randomChunks(input, seed) });
  return out;
}

/** One seeded random splitting: pieces of 1–7 bytes for even seeds, 1–700 for odd ones. */
export function randomChunks(input: Buffer, seed: number): Buffer[] {
  const random = prng(seed);
  const max = seed % 2 === 0 ? 7 : 700;
  const chunks: Buffer[] = [];
  for (let i = 0; i < input.length; ) {
    const n = 1 + int(random, max);
    // Copies: a parser must not depend on chunks sharing one backing buffer.
    chunks.push(Buffer.from(input.subarray(i, i + n)));
    i += n;
  }
  return chunks;
}
