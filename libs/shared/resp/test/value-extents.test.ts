import { describe, expect, it } from 'vitest';
import { RespDecoder, type RespDecoderLimits } from '../src/index.js';

/**
 * Feeds `input` in chunks of `size` bytes and rebuilds each value's raw bytes from the end
 * offsets the decoder reports, the way a proxy forwards what it received.
 */
function rawFrames(input: Buffer, size: number, limits: RespDecoderLimits = {}): string[] {
  const frames: string[] = [];
  let carry: Buffer[] = [];
  let chunk: Buffer = Buffer.alloc(0);
  let start = 0;
  const decoder = new RespDecoder({
    ...limits,
    onValue: (_value, end) => {
      frames.push(Buffer.concat([...carry, chunk.subarray(start, end)]).toString('latin1'));
      carry = [];
      start = end;
    },
    onError: (err) => {
      throw err;
    },
  });
  for (let off = 0; off < input.length; off += size) {
    chunk = input.subarray(off, off + size);
    start = 0;
    decoder.push(chunk);
    if (start < chunk.length) carry.push(chunk.subarray(start));
  }
  return frames;
}

describe('RespDecoder: where each value ends', () => {
  const replies = [
    '+OK\r\n',
    '$5\r\nhello\r\n',
    '$-1\r\n',
    '*3\r\n:1\r\n$0\r\n\r\n*1\r\n_\r\n',
    '%1\r\n+k\r\n$1\r\nv\r\n',
    '|1\r\n+ttl\r\n:3\r\n$2\r\nab\r\n',
    '>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n',
    '$?\r\n;2\r\nab\r\n;0\r\n',
    '-ERR x\r\n',
  ];

  it('gives each reply its exact bytes, however the input is split', () => {
    const input = Buffer.from(replies.join(''), 'latin1');
    for (const size of [1, 2, 3, 7, input.length]) expect(rawFrames(input, size)).toEqual(replies);
  });

  it('gives each command its exact bytes in server mode (multibulk and inline)', () => {
    const commands = ['*2\r\n$3\r\nGET\r\n$1\r\nk\r\n', 'PING\r\n', 'SET k "a b"\n', '*1\r\n$4\r\nQUIT\r\n'];
    const input = Buffer.from(commands.join(''), 'latin1');
    for (const size of [1, 5, input.length])
      expect(rawFrames(input, size, { mode: 'server' })).toEqual(commands);
  });

  it('counts skipped empty commands into the next value, which a server also skips', () => {
    const input = Buffer.from('*0\r\n\r\n*1\r\n$4\r\nPING\r\n', 'latin1');
    expect(rawFrames(input, 3, { mode: 'server' })).toEqual(['*0\r\n\r\n*1\r\n$4\r\nPING\r\n']);
  });
});
