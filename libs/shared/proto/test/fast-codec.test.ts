import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  decodeFrame,
  decodeFrameFast,
  encodedFrameLength,
  encodeFrame,
  encodeFrameFast,
  encodeFrameInto,
  encodeFrameVectored,
  FrameSchema,
  frame,
  streamIdOf,
  withStreamId,
} from '../src/index.js';
import { byteViews, difference, FrameGenerator, Rng } from './random-frames.js';

const CASES = 6_000;

const concat = (pieces: Uint8Array[]) =>
  Buffer.concat(pieces.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
const same = (a: Uint8Array, b: Uint8Array) =>
  Buffer.compare(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  ) === 0;

/** A plain Uint8Array over a Buffer's bytes, so that decoded views compare as Uint8Arrays. */
const u8 = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

describe('fast frame codec agrees with protobuf-es', () => {
  it(`writes the same bytes for ${CASES} random frames of every kind and field combination`, () => {
    const gen = new FrameGenerator(new Rng(0x5eed_c0de));
    const kinds = new Set<string>();
    let largest = 0;
    for (let i = 0; i < CASES; i++) {
      const { frame: f } = gen.generate();
      kinds.add(f.kind.case ?? 'empty');
      const reference = toBinary(FrameSchema, f);
      largest = Math.max(largest, reference.byteLength);
      const fast = encodeFrameFast(f);
      if (!same(fast, reference)) {
        throw new Error(
          `case ${i} (${f.kind.case}): fast ${fast.toString('hex').slice(0, 200)} != ${Buffer.from(reference).toString('hex').slice(0, 200)}`,
        );
      }
      expect(encodedFrameLength(f)).toBe(reference.byteLength);
      expect(same(encodeFrame(f), reference)).toBe(true);
    }
    expect([...kinds].sort()).toEqual(
      [
        'accepted',
        'batch',
        'data',
        'empty',
        'end',
        'goAway',
        'hello',
        'open',
        'ping',
        'pong',
        'registration',
        'reset',
        'responseHead',
        'welcome',
        'windowUpdate',
      ].sort(),
    );
    // The generator reaches large values too, not only small ones.
    expect(largest).toBeGreaterThan(100 * 1024);
  });

  it('decodes what protobuf-es writes into the same message, and protobuf-es decodes what it writes', () => {
    const gen = new FrameGenerator(new Rng(0xdec0de));
    let roundTrips = 0;
    for (let i = 0; i < CASES; i++) {
      const { frame: f, lossy } = gen.generate();
      const reference = toBinary(FrameSchema, f);
      expect(difference(decodeFrameFast(reference), fromBinary(FrameSchema, reference))).toBeUndefined();
      const fast = encodeFrameFast(f);
      expect(difference(fromBinary(FrameSchema, fast), decodeFrameFast(fast))).toBeUndefined();
      if (!lossy) {
        // A lone surrogate or a leading BOM changes in UTF-8 for both codecs alike; all else
        // comes back exactly.
        expect(difference(decodeFrameFast(fast), f)).toBeUndefined();
        roundTrips++;
      }
    }
    expect(roundTrips).toBeGreaterThan(CASES / 2);
  });

  it('decodes concatenated frames as protobuf-es does (last value wins, messages merge)', () => {
    const gen = new FrameGenerator(new Rng(77), 8 * 1024);
    for (let i = 0; i < 2_000; i++) {
      const a = toBinary(FrameSchema, gen.generate().frame);
      const b = toBinary(FrameSchema, gen.generate().frame);
      const joined = Buffer.concat([a, b]);
      expect(difference(decodeFrameFast(joined), fromBinary(FrameSchema, joined))).toBeUndefined();
    }
  });

  it('keeps unknown fields and writes them back, as protobuf-es does', () => {
    // Field 6 of Open is the retired deadline_unix_ms, field 40 is unknown to this build.
    const bytes = Buffer.from([0x1a, 0x08, 0x08, 0x05, 0x30, 0x96, 0x01, 0xc2, 0x02, 0x00]);
    const f = decodeFrameFast(u8(bytes));
    expect(f).toEqual(fromBinary(FrameSchema, u8(bytes)));
    expect(f.kind.case === 'open' && f.kind.value.$unknown).toEqual([
      { no: 6, wireType: 0, data: Uint8Array.from([0x96, 0x01]) },
      { no: 40, wireType: 2, data: Uint8Array.from([0x00]) },
    ]);
    expect(encodeFrameFast(f).equals(bytes)).toBe(true);
  });

  it('encodes at an offset, into exactly the measured length', () => {
    const gen = new FrameGenerator(new Rng(5));
    for (let i = 0; i < 500; i++) {
      const { frame: f } = gen.generate();
      const reference = toBinary(FrameSchema, f);
      const n = encodedFrameLength(f);
      // Room for gRPC's 5-byte message header in front, and a guard byte behind.
      const out = Buffer.alloc(5 + n + 1, 0xee);
      expect(encodeFrameInto(f, out, 5)).toBe(5 + n);
      expect(out.subarray(0, 5).every((b) => b === 0xee)).toBe(true);
      expect(out.subarray(5, 5 + n).equals(reference)).toBe(true);
      expect(out[5 + n]).toBe(0xee);
      expect(encodeFrameFast(f, 5).subarray(5).equals(reference)).toBe(true);
    }
    const f = frame({ case: 'end', value: { streamId: 300 } });
    expect(() => encodeFrameInto(f, Buffer.alloc(4), 1)).toThrow(/does not fit/);
  });

  it('encodes vectored: framing in one buffer, large payloads as the caller’s own views', () => {
    const gen = new FrameGenerator(new Rng(11));
    let viewsPassed = 0;
    for (let i = 0; i < 1_500; i++) {
      const { frame: f } = gen.generate();
      const reference = toBinary(FrameSchema, f);
      const pieces = encodeFrameVectored(f, { reserve: 5, minViewBytes: 1024 });
      const joined = concat(pieces);
      expect(joined.subarray(5).equals(Buffer.from(reference))).toBe(true);
      const large = byteViews(f).filter((v) => v.byteLength >= 1024);
      for (const v of large) {
        // The very same object: the payload was not copied.
        expect(pieces.includes(v)).toBe(true);
        viewsPassed++;
      }
      expect(pieces.length).toBeLessThanOrEqual(1 + 2 * large.length);
    }
    expect(viewsPassed).toBeGreaterThan(50);
    // A 1 MiB Data frame: a header of a few bytes plus the payload view.
    const chunk = new Uint8Array(1024 * 1024).fill(7);
    const pieces = encodeFrameVectored(
      frame({ case: 'data', value: { streamId: 9, chunk, endStream: true } }),
    );
    expect(pieces.length).toBe(3);
    expect(pieces[0]!.byteLength).toBeLessThanOrEqual(10);
    expect(pieces[1]).toBe(chunk);
    expect([...pieces[2]!]).toEqual([0x18, 0x01]);
  });

  it('decodes chunks and inline bodies as views into the input, never copies', () => {
    const input = Buffer.from(
      toBinary(
        FrameSchema,
        frame({
          case: 'batch',
          value: {
            frames: [
              frame({ case: 'data', value: { streamId: 1, chunk: new Uint8Array(70_000).fill(1) } }),
              frame({
                case: 'responseHead',
                value: { streamId: 3, status: 200, body: Buffer.from('{}'), endStream: true },
              }),
              frame({ case: 'open', value: { streamId: 5, body: Buffer.from('x'), hasBody: false } }),
            ],
          },
        }),
      ),
    );
    const f = decodeFrame(input);
    const views = byteViews(f);
    expect(views).toHaveLength(3);
    for (const v of views) {
      expect(v.buffer).toBe(input.buffer);
      expect(v.byteOffset).toBeGreaterThanOrEqual(input.byteOffset);
      expect(v.byteOffset + v.byteLength).toBeLessThanOrEqual(input.byteOffset + input.byteLength);
      // A Buffer in, Buffers out: consumers need not wrap them again.
      expect(Buffer.isBuffer(v)).toBe(true);
    }
    input[input.length - 1] = 'y'.charCodeAt(0);
    expect(Buffer.from(views[2]!).toString()).toBe('y');
  });

  it('relays a frame under another stream id with the same payload objects', () => {
    const chunk = Buffer.alloc(64 * 1024, 5);
    const data = frame({ case: 'data', value: { streamId: 7, chunk, endStream: true } });
    const relayed = withStreamId(data, 1_000_001);
    expect(streamIdOf(relayed)).toBe(1_000_001);
    expect(streamIdOf(data)).toBe(7);
    expect(relayed.kind.case === 'data' && relayed.kind.value.chunk).toBe(chunk);
    expect(toBinary(FrameSchema, relayed)).toEqual(
      toBinary(FrameSchema, frame({ case: 'data', value: { streamId: 1_000_001, chunk, endStream: true } })),
    );
    const pieces = encodeFrameVectored(relayed);
    expect(pieces).toContain(chunk);
    const head = frame({
      case: 'responseHead',
      value: { streamId: 2, status: 404, headers: [{ name: 'a', value: 'b' }] },
    });
    const moved = withStreamId(head, 4);
    expect(moved.kind.case === 'responseHead' && moved.kind.value.headers).toBe(
      head.kind.case === 'responseHead' && head.kind.value.headers,
    );
    expect(() => withStreamId(frame({ case: 'ping', value: {} }), 1)).toThrow(/belongs to no stream/);
    expect(streamIdOf(frame({ case: 'goAway', value: {} }))).toBeUndefined();
  });

  it('refuses values a uint32 or int32 field cannot hold, as protobuf-es does', () => {
    for (const bad of [-1, 2 ** 32, 1.5, Number.NaN]) {
      const f = frame({ case: 'end', value: { streamId: 0 } });
      if (f.kind.case === 'end') f.kind.value.streamId = bad;
      expect(() => toBinary(FrameSchema, f)).toThrow(/invalid uint32/);
      expect(() => encodeFrameFast(f)).toThrow(/invalid uint32/);
    }
    const r = create(FrameSchema, { kind: { case: 'reset', value: { streamId: 1 } } });
    if (r.kind.case === 'reset') (r.kind.value as { code: number }).code = 2 ** 31;
    expect(() => encodeFrameFast(r)).toThrow(/invalid int32/);
  });
});
