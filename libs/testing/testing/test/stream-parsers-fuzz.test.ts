import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readResizes } from '../src/kube/streams/command-runner.js';
import type { TerminalSize } from '../src/kube/streams/process-io.js';
import { parseScript, ShellSyntaxError } from '../src/kube/streams/shell-parser.js';
import { SpdyProtocolError } from '../src/kube/streams/spdy-frames.js';
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  HeaderCompressor,
  HeaderDecompressor,
} from '../src/kube/streams/spdy-header-codec.js';
import { chunkings, int, prng, randomBuffer } from './support/chunking.js';

async function sizes(chunks: Buffer[]): Promise<TerminalSize[]> {
  const out: TerminalSize[] = [];
  await readResizes(Readable.from(chunks), (s) => out.push(s));
  return out;
}

describe('the resize stream (kubectl writes one JSON object per size)', () => {
  it('reads concatenated objects the same whole, byte by byte and in random pieces', async () => {
    const input = Buffer.from(
      '{"Width":80,"Height":24}\n{"Width":120,"Height":40}\n  {"Height":5,"Width":7,"X":"}"}',
    );
    for (const c of chunkings(input)) {
      expect(await sizes(c.chunks), c.name).toEqual([
        { width: 80, height: 24 },
        { width: 120, height: 40 },
        { width: 7, height: 5 },
      ]);
    }
  });

  it('stops at the first malformed value, keeping what came before', async () => {
    expect(await sizes([Buffer.from('{"Width":1,"Height":2}\n[1,2]\n{"Width":3,"Height":4}')])).toEqual([
      { width: 1, height: 2 },
    ]);
    expect(await sizes([Buffer.from(`{"Width":1,${' '.repeat(70_000)}`)])).toEqual([]);
  });
});

describe('fuzz: header blocks, compressed or not, fail only as protocol errors', () => {
  it('random and mutated blocks', () => {
    const good = encodeHeaderBlock({ streamtype: 'data', port: '8080', requestid: '1' });
    const compressed = new HeaderCompressor().compress(good);
    for (let seed = 1; seed <= 400; seed++) {
      const random = prng(seed);
      const plain = seed % 2 === 0 ? randomBuffer(random, int(random, 64)) : Buffer.from(good);
      if (seed % 2 === 1) for (let k = 0; k < 3; k++) plain[int(random, plain.length)] = int(random, 256);
      const zipped = Buffer.from(compressed);
      for (let k = 0, n = 1 + int(random, 4); k < n; k++)
        zipped[2 + int(random, zipped.length - 2)] = int(random, 256);
      for (const attempt of [
        () => decodeHeaderBlock(plain),
        () => decodeHeaderBlock(new HeaderDecompressor().decompress(zipped)),
      ]) {
        try {
          attempt();
        } catch (err) {
          expect(err, `seed ${seed}`).toBeInstanceOf(SpdyProtocolError);
        }
      }
    }
  });
});

describe('fuzz: the shell parser parses or refuses with a syntax error, nothing else', () => {
  it('random scripts over the shell’s special characters', () => {
    const alphabet = [
      'a',
      'b',
      ' ',
      '"',
      "'",
      '\\',
      '$',
      '{',
      '}',
      '?',
      '#',
      ';',
      '&',
      '|',
      '>',
      '<',
      '2',
      '!',
      '\n',
      '=',
      '(',
      '`',
      '-',
    ];
    for (let seed = 1; seed <= 2000; seed++) {
      const random = prng(seed);
      let script = '';
      for (let i = 0, n = int(random, 30); i < n; i++) script += alphabet[int(random, alphabet.length)];
      try {
        parseScript(script);
      } catch (err) {
        expect(err, JSON.stringify(script)).toBeInstanceOf(ShellSyntaxError);
      }
    }
  });
});
