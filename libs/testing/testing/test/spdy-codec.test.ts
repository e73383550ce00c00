import { constants, createDeflate, createInflate } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { adler32, SPDY3_DICTIONARY } from '../src/kube/streams/spdy-dictionary.js';
import {
  encodeDataFrame,
  encodeGoAway,
  encodeHeaders,
  encodePing,
  encodeRstStream,
  encodeSettings,
  encodeSynReply,
  encodeSynStream,
  encodeWindowUpdate,
  FLAG_FIN,
  type SpdyFrame,
  SpdyFrameParser,
  SpdyProtocolError,
} from '../src/kube/streams/spdy-frames.js';
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  HeaderCompressor,
  HeaderDecompressor,
} from '../src/kube/streams/spdy-header-codec.js';
import { chunkings, int, prng, randomBuffer, randomChunks } from './support/chunking.js';

type Normal =
  | Exclude<SpdyFrame, { type: 'data' }>
  | { type: 'data'; streamId: number; fin: boolean; data: string };

/** Parses everything, merging the pieces of DATA frames (a frame may arrive in several). */
function parseAll(chunks: Buffer[]): Normal[] {
  const out: Normal[] = [];
  let open: { streamId: number; parts: Buffer[] } | undefined;
  const flush = (fin = false) => {
    if (!open) return;
    out.push({ type: 'data', streamId: open.streamId, fin, data: Buffer.concat(open.parts).toString('hex') });
    open = undefined;
  };
  const parser = new SpdyFrameParser((f) => {
    if (f.type === 'data') {
      if (open && open.streamId !== f.streamId) flush();
      open ??= { streamId: f.streamId, parts: [] };
      open.parts.push(Buffer.from(f.data));
      if (f.fin) flush(true);
      return;
    }
    flush();
    out.push(f);
  });
  for (const c of chunks) parser.push(c);
  flush();
  return out;
}

function sampleFrames(): { bytes: Buffer; expected: Normal[] } {
  const header = Buffer.from('compressed-header-bytes');
  const payload = Buffer.from(Array.from({ length: 3000 }, (_, i) => i & 0xff));
  const frames: Array<[Buffer, Normal[]]> = [
    [
      encodeSynStream(1, header, { flags: FLAG_FIN, priority: 3, associatedTo: 0 }),
      [
        {
          type: 'syn_stream',
          streamId: 1,
          associatedTo: 0,
          priority: 3,
          flags: FLAG_FIN,
          headerBlock: header,
        },
      ],
    ],
    [encodeSynReply(2, header), [{ type: 'syn_reply', streamId: 2, flags: 0, headerBlock: header }]],
    [
      encodeHeaders(3, header, FLAG_FIN),
      [{ type: 'headers', streamId: 3, flags: FLAG_FIN, headerBlock: header }],
    ],
    [
      encodeDataFrame(1, payload, false),
      [{ type: 'data', streamId: 1, fin: false, data: payload.toString('hex') }],
    ],
    [encodeRstStream(5, 5), [{ type: 'rst_stream', streamId: 5, status: 5 }]],
    [
      encodeSettings([{ flags: 1, id: 7, value: 65536 }]),
      [{ type: 'settings', flags: 0, entries: [{ flags: 1, id: 7, value: 65536 }] }],
    ],
    [encodePing(7), [{ type: 'ping', id: 7 }]],
    [encodeWindowUpdate(1, 1000), [{ type: 'window_update', streamId: 1, delta: 1000 }]],
    [encodeDataFrame(3, Buffer.alloc(0), true), [{ type: 'data', streamId: 3, fin: true, data: '' }]],
    [encodeGoAway(9, 0), [{ type: 'goaway', lastGoodStreamId: 9, status: 0 }]],
  ];
  return { bytes: Buffer.concat(frames.map(([b]) => b)), expected: frames.flatMap(([, e]) => e) };
}

describe('SPDY/3 framing', () => {
  it('the header dictionary is the SPDY/3 one (its zlib id is 0xe3c6a7c2)', () => {
    expect(SPDY3_DICTIONARY.length).toBe(1423);
    expect(adler32(SPDY3_DICTIONARY)).toBe(0xe3c6a7c2);
  });

  it('parses every frame type the same whole, byte by byte and in random pieces', () => {
    const { bytes, expected } = sampleFrames();
    for (const c of chunkings(bytes)) expect(parseAll(c.chunks), c.name).toEqual(expected);
  });

  it('streams a DATA frame as it arrives, FIN only on its last piece', () => {
    const payload = randomBuffer(prng(5), 100_000);
    const pieces: Array<{ size: number; fin: boolean }> = [];
    const parser = new SpdyFrameParser((f) => {
      if (f.type === 'data') pieces.push({ size: f.data.length, fin: f.fin });
    });
    const wire = encodeDataFrame(9, payload, true);
    for (let i = 0; i < wire.length; i += 4096) parser.push(wire.subarray(i, i + 4096));
    expect(pieces.length).toBeGreaterThan(20);
    expect(pieces.every((p) => p.size <= 4096)).toBe(true);
    expect(pieces.filter((p) => p.fin)).toEqual([pieces[pieces.length - 1]]);
    expect(pieces.reduce((n, p) => n + p.size, 0)).toBe(payload.length);
  });

  it('an unknown control frame type is passed on as unknown (receivers ignore them)', () => {
    const frame = Buffer.from([0x80, 0x03, 0x00, 0x63, 0x00, 0x00, 0x00, 0x02, 0xab, 0xcd]);
    expect(parseAll([frame])).toEqual([{ type: 'unknown', frameType: 0x63, flags: 0, length: 2 }]);
  });

  const bad: Array<[string, Buffer, RegExp]> = [
    ['DATA on stream 0', Buffer.from([0, 0, 0, 0, 0, 0, 0, 1, 9]), /DATA frame on stream 0/],
    [
      'version 2',
      Buffer.from([0x80, 0x02, 0x00, 0x06, 0, 0, 0, 4, 0, 0, 0, 1]),
      /unsupported SPDY version 2/,
    ],
    [
      'PING with flags',
      Buffer.from([0x80, 0x03, 0x00, 0x06, 1, 0, 0, 4, 0, 0, 0, 1]),
      /PING frame with flags/,
    ],
    ['PING id 0', encodePing(0), /PING with id 0/],
    [
      'RST status 0',
      Buffer.from([0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0]),
      /RST_STREAM with status 0/,
    ],
    [
      'RST on stream 0',
      Buffer.from([0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]),
      /RST_STREAM frame on stream 0/,
    ],
    [
      'GOAWAY of 4 bytes',
      Buffer.from([0x80, 3, 0, 7, 0, 0, 0, 4, 0, 0, 0, 0]),
      /GOAWAY frame must be 8 bytes/,
    ],
    ['short SYN_STREAM', Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1]), /SYN_STREAM frame too short/],
    [
      'SYN_STREAM on 0',
      Buffer.concat([Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 10]), Buffer.alloc(10)]),
      /on stream 0/,
    ],
    [
      'SETTINGS count mismatch',
      Buffer.from([0x80, 3, 0, 4, 0, 0, 0, 4, 0, 0, 0, 2]),
      /cannot hold 2 entries/,
    ],
    ['WINDOW_UPDATE of 4 bytes', Buffer.from([0x80, 3, 0, 9, 0, 0, 0, 4, 0, 0, 0, 1]), /must be 8 bytes/],
  ];
  it.each(bad)('refuses %s, and stays failed', (_name, bytes, message) => {
    const parser = new SpdyFrameParser(() => {});
    expect(() => parser.push(bytes)).toThrow(message);
    expect(() => parser.push(encodePing(1))).toThrow(SpdyProtocolError);
  });

  it('refuses a control frame over the size limit before reading it', () => {
    const parser = new SpdyFrameParser(() => {}, { maxControlFrameBytes: 100 });
    const frame = encodeSynStream(1, Buffer.alloc(200));
    expect(() => parser.push(frame.subarray(0, 8))).toThrow(
      /control frame of 210 bytes exceeds the limit of 100/,
    );
  });

  it('fuzz: random frame sequences survive every splitting', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = prng(seed);
      const parts: Buffer[] = [];
      const expected: Normal[] = [];
      for (let i = 0, n = 1 + int(random, 12); i < n; i++) {
        const id = 1 + int(random, 1000) * 2;
        switch (int(random, 5)) {
          case 0: {
            const data = randomBuffer(random, int(random, 5000));
            const fin = random() < 0.5;
            parts.push(encodeDataFrame(id, data, fin));
            expected.push({ type: 'data', streamId: id, fin, data: data.toString('hex') });
            // Two DATA frames of one stream in a row merge in parseAll unless the first had FIN.
            if (!fin) parts.push(encodePing(2 * (i + 1)));
            if (!fin) expected.push({ type: 'ping', id: 2 * (i + 1) });
            break;
          }
          case 1: {
            const block = randomBuffer(random, int(random, 300));
            parts.push(encodeSynStream(id, block));
            expected.push({
              type: 'syn_stream',
              streamId: id,
              associatedTo: 0,
              priority: 0,
              flags: 0,
              headerBlock: block,
            });
            break;
          }
          case 2:
            parts.push(encodeRstStream(id, 1 + int(random, 11)));
            expected.push({
              type: 'rst_stream',
              streamId: id,
              status: (parts[parts.length - 1] as Buffer).readUInt32BE(12),
            });
            break;
          case 3:
            parts.push(encodePing(1 + int(random, 1e6)));
            expected.push({ type: 'ping', id: (parts[parts.length - 1] as Buffer).readUInt32BE(8) });
            break;
          default:
            parts.push(encodeWindowUpdate(id, int(random, 1e6)));
            expected.push({
              type: 'window_update',
              streamId: id,
              delta: (parts[parts.length - 1] as Buffer).readUInt32BE(12),
            });
        }
      }
      for (const c of chunkings(Buffer.concat(parts), [seed]))
        expect(parseAll(c.chunks), `seed ${seed} ${c.name}`).toEqual(expected);
    }
  });

  it('fuzz: mutated and random bytes end in frames or a SpdyProtocolError, nothing else', () => {
    const { bytes } = sampleFrames();
    for (let seed = 1; seed <= 300; seed++) {
      const random = prng(seed);
      const input = seed % 3 === 0 ? randomBuffer(random, int(random, 400)) : Buffer.from(bytes);
      if (seed % 3 !== 0)
        for (let k = 0, n = 1 + int(random, 6); k < n; k++)
          input[int(random, input.length)] = int(random, 256);
      const cut = input.subarray(0, int(random, input.length + 1));
      const parser = new SpdyFrameParser(() => {});
      try {
        for (const c of randomChunks(cut, seed)) parser.push(c);
      } catch (err) {
        expect(err, `seed ${seed}`).toBeInstanceOf(SpdyProtocolError);
      }
    }
  });
});

/** Runs Node's streaming zlib like Go's framer: one context, a sync flush after each block. */
async function streamingZlib(kind: 'deflate' | 'inflate', blocks: Buffer[]): Promise<Buffer[]> {
  const z =
    kind === 'deflate'
      ? createDeflate({ dictionary: SPDY3_DICTIONARY, level: 9 })
      : createInflate({ dictionary: SPDY3_DICTIONARY });
  const out: Buffer[] = [];
  for (const block of blocks) {
    const parts: Buffer[] = [];
    const onData = (d: Buffer) => parts.push(d);
    z.on('data', onData);
    z.write(block);
    await new Promise<void>((resolve) => z.flush(constants.Z_SYNC_FLUSH, () => resolve()));
    z.off('data', onData);
    out.push(Buffer.concat(parts));
  }
  z.destroy();
  return out;
}

describe('SPDY/3 header blocks', () => {
  const blocks = Array.from({ length: 60 }, (_, i) =>
    encodeHeaderBlock({
      streamtype: ['error', 'stdin', 'stdout', 'data'][i % 4]!,
      port: String(8000 + i),
      requestid: String(i),
      // Enough distinct bytes to push the compression window past 32 KiB.
      'x-filler': randomBuffer(prng(i), 900).toString('base64'),
    }),
  );

  it('what the compressor writes, a zlib stream primed with the dictionary reads back', async () => {
    const compressor = new HeaderCompressor();
    const wire = blocks.map((b) => compressor.compress(b));
    expect(wire[0]!.subarray(0, 6).toString('hex')).toBe('78f9e3c6a7c2');
    expect(Buffer.concat(await streamingZlib('inflate', wire))).toEqual(Buffer.concat(blocks));
  });

  it('reads what a client with one zlib context (as Go) writes, past the 32 KiB window', async () => {
    const decompressor = new HeaderDecompressor();
    const wire = await streamingZlib('deflate', blocks);
    expect(wire.map((w) => decompressor.decompress(w))).toEqual(blocks);
    expect(decodeHeaderBlock(blocks[5]!).get('port')).toEqual(['8005']);
  });

  it('refuses a wrong dictionary, garbage and blocks over the size limit', async () => {
    expect(() => new HeaderDecompressor().decompress(Buffer.from([0x78, 0xf9, 0, 0, 0, 1]))).toThrow(
      /dictionary 1/,
    );
    expect(() => new HeaderDecompressor().decompress(Buffer.from('garbage'))).toThrow(/zlib header/);
    const [first] = await streamingZlib('deflate', [encodeHeaderBlock({ big: 'x'.repeat(5000) })]);
    expect(() => new HeaderDecompressor(1000).decompress(first!)).toThrow(SpdyProtocolError);
    const corrupt = Buffer.from(first!);
    corrupt.writeUInt16BE(corrupt.readUInt16BE(8) ^ 0xffff, 8);
    expect(() => new HeaderDecompressor().decompress(corrupt)).toThrow(SpdyProtocolError);
  });

  it('name/value blocks: several values, and what Go refuses', () => {
    const block = encodeHeaderBlock(new Map([['Accept', ['a', 'b']]]));
    expect([...decodeHeaderBlock(block)]).toEqual([['accept', ['a', 'b']]]);
    const raw = (pairs: Array<[string, string]>, extra = Buffer.alloc(0)) => {
      const parts = [Buffer.from([0, 0, 0, pairs.length])];
      for (const [n, v] of pairs) {
        for (const s of [n, v]) parts.push(Buffer.from([0, 0, 0, s.length]), Buffer.from(s));
      }
      return Buffer.concat([...parts, extra]);
    };
    expect(() => decodeHeaderBlock(raw([['Upper', 'x']]))).toThrow(/not lower case/);
    expect(() =>
      decodeHeaderBlock(
        raw([
          ['a', '1'],
          ['a', '2'],
        ]),
      ),
    ).toThrow(/appears twice/);
    expect(() => decodeHeaderBlock(raw([['', 'x']]))).toThrow(/empty header name/);
    expect(() => decodeHeaderBlock(raw([['a', 'x']], Buffer.from([1])))).toThrow(/stray bytes/);
    expect(() => decodeHeaderBlock(raw([['a', 'x']]).subarray(0, 9))).toThrow(/truncated/);
  });
});
