import { Readable } from 'node:stream';
import { expect, it } from 'vitest';
import { readBuffered } from '../src/index.js';

it('takes every buffered chunk at once and leaves later ones to the stream', async () => {
  const s = new Readable({ read() {} });
  expect(readBuffered(s)).toHaveLength(0);
  s.push('ab');
  s.push('cd');
  expect(readBuffered(s).toString()).toBe('abcd');
  // Nothing was lost to a 'data' listener attached afterwards: the next bytes still arrive.
  const later: string[] = [];
  s.on('data', (c: Buffer) => later.push(c.toString()));
  s.push('ef');
  s.push(null);
  await new Promise((r) => s.once('end', r));
  expect(later).toEqual(['ef']);
});
