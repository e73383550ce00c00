import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { lastDecodeWork } from '../src/codec/frame-decoder.js';
import { decodeFrameFast, encodeFrameFast, type Frame, FrameSchema } from '../src/index.js';
import { byteViews, difference, FrameGenerator, Rng, varint } from './random-frames.js';

// The decoder's own errors, each naming what is wrong. Anything else (a TypeError from reading
// past the input, a stack overflow, the work guard) fails the test.
const CLEAR =
  /^(premature EOF|invalid varint|illegal tag: .+|wire type \d is wrong for field \d+ of \w+|cannot decode [\w.]+ from binary: maximum recursion depth of 100 reached|invalid UTF-8 in [\w.]+|invalid end group tag|cant skip wire type \d|invalid pullplane\.tunnel\.v1\.\w+: .+)$/;

interface Outcome {
  frame?: Frame;
  error?: Error;
}

/**
 * Decodes `input` and checks the decoder's promises: a frame or a clear Error, never anything
 * else; every bytes value a view inside the input; work (tags read) bounded by the input length.
 */
function decodeChecked(input: Uint8Array): Outcome {
  let outcome: Outcome;
  try {
    outcome = { frame: decodeFrameFast(input) };
  } catch (err) {
    if (!(err instanceof Error) || err instanceof TypeError || !CLEAR.test(err.message)) {
      throw new Error(`unclear failure on ${Buffer.from(input).toString('hex')}: ${String(err)}`);
    }
    outcome = { error: err };
  }
  if (lastDecodeWork() > input.byteLength) {
    throw new Error(`${lastDecodeWork()} tags read from ${input.byteLength} bytes`);
  }
  if (outcome.frame) {
    for (const v of byteViews(outcome.frame)) {
      if (v.byteLength === 0) continue;
      const inside =
        v.buffer === input.buffer &&
        v.byteOffset >= input.byteOffset &&
        v.byteOffset + v.byteLength <= input.byteOffset + input.byteLength;
      // Cold frames are decoded by protobuf-es, whose bytes are views too.
      if (!inside) throw new Error(`a view outside the input on ${Buffer.from(input).toString('hex')}`);
    }
  }
  return outcome;
}

/**
 * What the fast decoder accepts, protobuf-es accepts too, with the same result: the fast one is
 * only ever stricter.
 */
function agreesWithReference(input: Uint8Array, f: Frame): void {
  let reference: Frame;
  try {
    reference = fromBinary(FrameSchema, input);
  } catch (err) {
    throw new Error(
      `protobuf-es refuses what the fast decoder took (${String(err)}): ${Buffer.from(input).toString('hex')}`,
    );
  }
  const d = difference(f, reference);
  if (d) throw new Error(`decoders disagree at ${d} on ${Buffer.from(input).toString('hex')}`);
}

/** A decoded frame encodes and decodes back to itself. */
function stable(f: Frame): void {
  const again = decodeFrameFast(encodeFrameFast(f));
  const d = difference(again, f);
  if (d) throw new Error(`re-encoding changed the frame at ${d}`);
}

const TAGS = [
  0x08, 0x0a, 0x10, 0x12, 0x18, 0x1a, 0x20, 0x22, 0x2a, 0x32, 0x38, 0x3a, 0x42, 0x48, 0x4a, 0x52, 0x5a, 0x62,
  0x6a,
];

// Tens of thousands of cases each: seconds on a quiet machine, far more on a loaded one; the
// assertions are about outcomes, so the budget is generous.
describe('fast frame decoder under fuzzing', { timeout: 180_000 }, () => {
  it('turns 40,000 random byte strings into a frame or a clear Error, reading at most one tag per byte', () => {
    const r = new Rng(0xf022);
    let frames = 0;
    let errors = 0;
    for (let i = 0; i < 40_000; i++) {
      const len = r.int(r.chance(0.1) ? 1024 : 96);
      const input = new Uint8Array(len);
      // Half the inputs lean towards real tags and small lengths, so they get deep into frames.
      for (let j = 0; j < len; j++)
        input[j] = i % 2 === 0 ? r.int(256) : r.chance(0.4) ? r.pick(TAGS) : r.int(16);
      const out = decodeChecked(input);
      if (out.frame) {
        frames++;
        agreesWithReference(input, out.frame);
        stable(out.frame);
      } else errors++;
    }
    // Both outcomes are reached: the inputs exercise the decoder, not only its first check.
    expect(frames).toBeGreaterThan(300);
    expect(errors).toBeGreaterThan(30_000);
  });

  it('turns 30,000 mutated valid frames into a frame or a clear Error', () => {
    const r = new Rng(0xb17f1);
    const gen = new FrameGenerator(r, 2048);
    let frames = 0;
    let errors = 0;
    for (let i = 0; i < 30_000; i++) {
      const bytes = Array.from(toBinary(FrameSchema, gen.generate().frame));
      for (let m = 0, n = 1 + r.int(4); m < n && bytes.length > 0; m++) {
        const at = r.int(bytes.length);
        switch (r.int(5)) {
          case 0:
            bytes[at] = r.int(256);
            break;
          case 1:
            bytes[at] = bytes[at]! ^ (1 << r.int(8));
            break;
          case 2:
            bytes.splice(at, 0, r.pick([0x80, 0xff, 0x00, 0x0f, ...TAGS]));
            break;
          case 3:
            bytes.splice(at, 1 + r.int(4));
            break;
          default:
            bytes.length = at;
        }
      }
      // At an odd offset inside a larger buffer, as a grpc-js message may be.
      const backing = new Uint8Array(bytes.length + 6).fill(0xaa);
      backing.set(bytes, 3);
      const input = backing.subarray(3, 3 + bytes.length);
      const out = decodeChecked(input);
      if (out.frame) {
        frames++;
        agreesWithReference(input, out.frame);
        stable(out.frame);
      } else errors++;
    }
    expect(frames).toBeGreaterThan(1_000);
    expect(errors).toBeGreaterThan(1_000);
  });

  it('decodes every truncation of valid frames, byte by byte, to a frame or a clear Error', () => {
    const gen = new FrameGenerator(new Rng(0x7c), 512);
    let cuts = 0;
    for (let i = 0; i < 300; i++) {
      const whole = toBinary(FrameSchema, gen.generate().frame);
      for (let n = 0; n < whole.byteLength; n++) {
        decodeChecked(whole.subarray(0, n));
        cuts++;
      }
      const full = decodeChecked(whole);
      expect(difference(full.frame, fromBinary(FrameSchema, whole))).toBeUndefined();
    }
    expect(cuts).toBeGreaterThan(10_000);
  });

  it('stays linear on large and adversarial inputs (bounded work, not a timer)', () => {
    const r = new Rng(99);
    // 4 MiB of random bytes, and 4 MiB of the densest valid encoding: one-byte fields.
    const noise = new Uint8Array(4 * 1024 * 1024).map(() => r.int(256));
    decodeChecked(noise);
    const fields = 2 * 1024 * 1024;
    const dataHead = [0x2a, ...varint(2 * fields)];
    const dense = new Uint8Array(dataHead.length + 2 * fields);
    dense.set(dataHead);
    for (let i = dataHead.length; i < dense.length; i += 2) dense.set([0x08, 0x01], i);
    const out = decodeChecked(dense);
    expect(out.frame?.kind.case).toBe('data');
    expect(lastDecodeWork()).toBe(1 + fields);
    // Empty frames inside a batch: every byte pair a frame; the work stays one tag per byte.
    const batchHead = [0x6a, ...varint(2 * 1024 * 1024)];
    const batch = new Uint8Array(batchHead.length + 2 * 1024 * 1024);
    batch.set(batchHead);
    for (let i = batchHead.length; i < batch.length; i += 2) batch.set([0x0a, 0x00], i);
    const many = decodeChecked(batch);
    expect(many.frame?.kind.case === 'batch' && many.frame.kind.value.frames.length).toBe(1024 * 1024);
  });

  it('refuses nesting deeper than protobuf-es does, with a clear Error instead of a stack overflow', () => {
    // Batch { frames: [ Frame { batch: ... } ] }, 1,000 levels deep.
    let inner: number[] = [];
    for (let i = 0; i < 1_000; i++) {
      const batch = [0x0a, ...varint(inner.length), ...inner];
      inner = [0x6a, ...varint(batch.length), ...batch];
    }
    const deep = Uint8Array.from(inner);
    expect(decodeChecked(deep).error?.message).toMatch(/maximum recursion depth/);
    expect(() => fromBinary(FrameSchema, deep)).toThrow(/maximum recursion depth/);
    // Unknown groups nested 1,000 deep inside an End.
    const groups = [...Array(1_000).fill(0x7b), ...Array(1_000).fill(0x7c)];
    const end = Uint8Array.from([0x32, ...varint(groups.length), ...groups]);
    expect(decodeChecked(end).error?.message).toMatch(/maximum recursion depth/);
  });

  it('reads non-canonical encodings as protobuf-es does', () => {
    const data = (...fields: number[]) => Uint8Array.from([0x2a, fields.length, ...fields]);
    const cases = [
      // Data.end_stream as long varints: any of the 64 bits set is true, bits past 64 are not.
      data(0x18, 0x80, 0x01),
      data(0x18, 0x80, 0x00),
      data(0x18, 0x80, 0x80, 0x80, 0x80, 0x10),
      data(0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
      data(0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02),
      // Data.stream_id as a ten-byte varint (a sign-extended negative): the low 32 bits count.
      data(0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
      // Fields out of order and repeated: the last value wins.
      data(0x18, 0x01, 0x08, 0x05, 0x08, 0x07, 0x18, 0x00),
      // Reset.code as a negative enum value.
      Uint8Array.from([0x3a, 0x0b, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
    ];
    for (const input of cases) {
      const out = decodeChecked(input);
      expect(out.error).toBeUndefined();
      agreesWithReference(input, out.frame!);
    }
  });

  it('names the problem: wrong wire type, bad UTF-8, a field past its message', () => {
    // Data.stream_id sent length-delimited.
    expect(decodeChecked(Uint8Array.from([0x2a, 0x02, 0x0a, 0x00])).error?.message).toBe(
      'wire type 2 is wrong for field 1 of Data',
    );
    // Header.name with an invalid UTF-8 byte.
    const badName = [0x0a, 0x02, 0x41, 0xff];
    const http = [0x1a, badName.length, ...badName];
    const open = [0x12, http.length, ...http];
    expect(decodeChecked(Uint8Array.from([0x1a, open.length, ...open])).error?.message).toBe(
      'invalid UTF-8 in Header.name',
    );
    // The same in a longer value (decoded natively), and a valid U+FFFD or BOM-led value.
    const longBad = [0x12, 0x14, ...Buffer.from('0123456789abcdefghi'), 0xc3];
    const longHttp = [0x1a, longBad.length, ...longBad];
    const longOpen = [0x12, longHttp.length, ...longHttp];
    expect(decodeChecked(Uint8Array.from([0x1a, longOpen.length, ...longOpen])).error?.message).toBe(
      'invalid UTF-8 in Header.value',
    );
    for (const text of ['replacement \ufffd is valid text', '\ufeffa value behind a byte order mark']) {
      const value = [...Buffer.from(text)];
      const header = [0x12, value.length, ...value];
      const http2 = [0x1a, header.length, ...header];
      const open2 = [0x12, http2.length, ...http2];
      const input = Uint8Array.from([0x1a, open2.length, ...open2]);
      const out = decodeChecked(input);
      agreesWithReference(input, out.frame!);
    }
    // A Data chunk claiming 5 bytes where its message has 2 left.
    expect(
      decodeChecked(Uint8Array.from([0x2a, 0x04, 0x12, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00])).error?.message,
    ).toBe('premature EOF');
    // A Hello (decoded by protobuf-es) with bad UTF-8 says which message it was.
    expect(decodeChecked(Uint8Array.from([0x0a, 0x03, 0x1a, 0x01, 0xff])).error?.message).toMatch(
      /^invalid pullplane\.tunnel\.v1\.Hello: /,
    );
  });
});
