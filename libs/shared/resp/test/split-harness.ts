import { expect } from 'vitest';
import { RespDecoder, type RespDecoderLimits, type RespValue } from '../src/index.js';

export interface DecodeOutcome {
  values: RespValue[];
  error?: { code: string; message: string };
  pending: boolean;
}

/** Deterministic PRNG (mulberry32) so every failure reproduces from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function decodeChunks(chunks: Buffer[], options: RespDecoderLimits = {}): DecodeOutcome {
  const values: RespValue[] = [];
  const errors: Array<{ code: string; message: string }> = [];
  const decoder = new RespDecoder({
    ...options,
    onValue: (v) => values.push(v),
    onError: (e) => errors.push({ code: e.code, message: e.message }),
  });
  for (const c of chunks) decoder.push(c);
  if (errors.length > 1) throw new Error(`onError called ${errors.length} times`);
  const out: DecodeOutcome = { values, pending: decoder.pending };
  if (errors[0] !== undefined) out.error = errors[0];
  return out;
}

export function bytewise(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i++) out.push(Buffer.from([buf[i]!]));
  return out;
}

export function randomSplit(buf: Buffer, next: () => number, maxPiece = 16): Buffer[] {
  const out: Buffer[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const n = 1 + Math.floor(next() * maxPiece);
    // Copies, so a decoder that wrongly kept offsets into an earlier chunk would be caught.
    out.push(Buffer.from(buf.subarray(pos, pos + n)));
    pos += n;
  }
  return out;
}

const toBuf = (input: Buffer | string): Buffer => (typeof input === 'string' ? Buffer.from(input) : input);

/**
 * Decodes `input` as one chunk, byte by byte and in random splits, asserts all three agree
 * (values, error and pending state), and returns the outcome.
 */
export function decodeBothWays(input: Buffer | string, options: RespDecoderLimits = {}): DecodeOutcome {
  const buf = toBuf(input);
  const whole = decodeChunks([Buffer.from(buf)], options);
  const bytes = decodeChunks(bytewise(buf), options);
  expect(bytes).toEqual(whole);
  const next = rng(buf.length);
  for (let i = 0; i < 3; i++) expect(decodeChunks(randomSplit(buf, next), options)).toEqual(whole);
  return whole;
}

export function expectValues(
  input: Buffer | string,
  expected: RespValue[],
  options: RespDecoderLimits = {},
): void {
  const out = decodeBothWays(input, options);
  expect(out.error).toBeUndefined();
  expect(out.pending).toBe(false);
  expect(out.values).toEqual(expected);
}

export function expectError(
  input: Buffer | string,
  code: string,
  message: string,
  options: RespDecoderLimits = {},
): DecodeOutcome {
  const out = decodeBothWays(input, options);
  expect(out.error).toEqual({ code, message });
  return out;
}
