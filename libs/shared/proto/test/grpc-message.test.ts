import { describe, expect, it } from 'vitest';
import {
  dataFrame,
  decodeFrameFast,
  encodeFrameFast,
  type Frame,
  GRPC_MESSAGE_PREFIX_BYTES,
  GrpcDeframer,
  type GrpcMessageError,
  grpcMessagePieces,
} from '../src/index.js';
import { FrameGenerator, Rng } from './random-frames.js';

/** A gRPC message as grpc-js frames one: flag 0, big-endian length, the bytes. */
function grpcJsStyle(message: Uint8Array, flag = 0): Buffer {
  const out = Buffer.alloc(GRPC_MESSAGE_PREFIX_BYTES + message.byteLength);
  out[0] = flag;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, GRPC_MESSAGE_PREFIX_BYTES);
  return out;
}

function deframe(chunks: Buffer[], maxMessageBytes = 1 << 20) {
  const messages: Buffer[] = [];
  const errors: GrpcMessageError[] = [];
  const d = new GrpcDeframer({
    maxMessageBytes,
    onMessage: (m) => messages.push(m),
    onError: (e) => errors.push(e),
  });
  for (const c of chunks) d.push(c);
  return { messages, errors, atBoundary: d.atBoundary };
}

/** Every way of feeding `bytes`: whole, byte by byte, and cut at seeded random places. */
function splits(bytes: Buffer, rng: Rng): Array<[string, Buffer[]]> {
  const byByte = [...bytes].map((b) => Buffer.from([b]));
  const random: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + rng.int(Math.max(1, Math.min(bytes.length - at, 64)));
    // Each piece a buffer of its own, as HTTP/2 hands chunks over.
    random.push(Buffer.from(bytes.subarray(at, at + n)));
    at += n;
  }
  return [
    ['whole', [Buffer.from(bytes)]],
    ['byte by byte', byByte],
    ['random cuts', random],
  ];
}

describe('grpcMessagePieces', () => {
  it('frames a Frame as grpc-js does (same prefix, same bytes), with a large chunk passed on as a view', () => {
    const chunk = Buffer.alloc(64 * 1024, 7);
    const f = dataFrame(5, chunk);
    const pieces = grpcMessagePieces(f);
    expect(pieces.some((p) => p.buffer === chunk.buffer)).toBe(true);
    expect(Buffer.concat(pieces)).toEqual(grpcJsStyle(encodeFrameFast(f)));
  });

  it('writes random frames of every kind as grpc-js would', () => {
    const gen = new FrameGenerator(new Rng(0x5eed_0001));
    for (let i = 0; i < 300; i++) {
      const { frame } = gen.generate();
      expect(Buffer.concat(grpcMessagePieces(frame, 16))).toEqual(grpcJsStyle(encodeFrameFast(frame)));
    }
  });
});

describe('GrpcDeframer', () => {
  const rng = new Rng(0x5eed_0002);
  const gen = new FrameGenerator(rng, 64 * 1024);
  const frames: Frame[] = [];
  for (let i = 0; i < 40; i++) frames.push(gen.generate().frame);
  const encoded = frames.map((f) => encodeFrameFast(f));
  const stream = Buffer.concat([...encoded.map((e) => grpcJsStyle(e)), grpcJsStyle(Buffer.alloc(0))]);

  for (const [how, chunks] of splits(stream, rng)) {
    it(`reads back every message, in order, fed ${how}`, () => {
      const { messages, errors, atBoundary } = deframe(chunks);
      expect(errors).toEqual([]);
      expect(atBoundary).toBe(true);
      expect(messages.map((m) => Buffer.from(m))).toEqual([...encoded, Buffer.alloc(0)]);
      // And they decode to the frames that were sent.
      expect(messages.slice(0, -1).map((m) => decodeFrameFast(m))).toEqual(
        frames.map((f) => decodeFrameFast(encodeFrameFast(f))),
      );
    });
  }

  it('hands a message inside one chunk over as a view of that chunk (no copy)', () => {
    const body = Buffer.alloc(1000, 1);
    const chunk = Buffer.concat([grpcJsStyle(body), grpcJsStyle(body)]);
    const { messages } = deframe([chunk]);
    expect(messages).toHaveLength(2);
    for (const m of messages) expect(m.buffer).toBe(chunk.buffer);
  });

  it('says when the stream ended inside a message', () => {
    const whole = grpcJsStyle(Buffer.alloc(100, 2));
    expect(deframe([whole.subarray(0, 3)]).atBoundary).toBe(false);
    expect(deframe([whole.subarray(0, 50)]).atBoundary).toBe(false);
    expect(deframe([whole]).atBoundary).toBe(true);
  });

  for (const [how, chunks] of splits(grpcJsStyle(Buffer.alloc(2048)), new Rng(3))) {
    it(`refuses a message over the limit from its prefix, before its body, fed ${how}`, () => {
      const { messages, errors } = deframe(chunks, 1024);
      expect(messages).toEqual([]);
      expect(errors).toHaveLength(1);
      expect(errors[0]!.reason).toBe('too_large');
      expect(errors[0]!.message).toBe('Received message larger than max (2048 vs. 1024)');
    });
  }

  it('refuses a compressed message (none was agreed) and reads nothing after it', () => {
    const good = grpcJsStyle(Buffer.from([8, 1]));
    const { messages, errors } = deframe([Buffer.concat([good, grpcJsStyle(Buffer.from([1]), 1), good])]);
    expect(messages).toHaveLength(1);
    expect(errors.map((e) => e.reason)).toEqual(['compressed']);
  });

  it('refuses unknown prefix flags', () => {
    const { errors } = deframe([grpcJsStyle(Buffer.from([1]), 0x80)]);
    expect(errors.map((e) => [e.reason, e.message])).toEqual([
      ['compressed', 'a message prefix with flags 128'],
    ]);
  });

  it('fuzz: random bytes end in messages or one clear error, never a throw', () => {
    const r = new Rng(0x5eed_0003);
    for (let i = 0; i < 2000; i++) {
      const bytes = Buffer.alloc(r.int(64));
      for (let j = 0; j < bytes.length; j++) bytes[j] = r.chance(0.5) ? 0 : r.int(256);
      for (const [, chunks] of splits(bytes, r)) {
        const { messages, errors } = deframe(chunks, 32);
        expect(errors.length).toBeLessThanOrEqual(1);
        for (const m of messages) expect(m.length).toBeLessThanOrEqual(32);
      }
    }
  });
});
