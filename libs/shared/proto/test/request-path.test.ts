import { describe, expect, it } from 'vitest';
import { checkRequestPath } from '../src/index.js';
import { requestPathRefusal } from '../src/request-path.js';
import { Rng } from './random-frames.js';

// The characters every rule turns on, and some it must leave alone.
const ALPHABET = [
  '/',
  '/',
  '/',
  '.',
  '.',
  '%',
  '2',
  'e',
  'E',
  'f',
  'F',
  '5',
  'c',
  '0',
  'a',
  'z',
  '?',
  '\\',
  '\x00',
  '\x1f',
  '\x7f',
  '\x85',
  'é',
  '=',
  '&',
  '~',
];

describe('checkRequestPath', () => {
  it('answers as the full check does, for every generated path (its one-pass prefilter never says more)', () => {
    const rng = new Rng(0x5eed);
    let passed = 0;
    for (let n = 0; n < 50_000; n++) {
      let path = rng.int(4) === 0 ? '' : '/';
      const len = rng.int(14);
      for (let i = 0; i < len; i++) path += ALPHABET[rng.int(ALPHABET.length)];
      const want = requestPathRefusal(path);
      expect(checkRequestPath(path), JSON.stringify(path)).toBe(want);
      if (want === undefined) passed++;
    }
    // Both answers were exercised, not only refusals.
    expect(passed).toBeGreaterThan(1_000);
  });

  it.each([
    ['/api/v1/namespaces/x/pods/y', undefined],
    ['/', undefined],
    ['/api/v1/pods?fieldSelector=metadata.name%3D..%2F..', undefined],
    ['/api/v1/pods?labelSelector=a//b', undefined],
    ['/a/.well-known/x', undefined],
    ['/a/.hidden', undefined],
    ['/a/b.', undefined],
    ['/a/..', 'dot segments are not allowed'],
    ['//a', 'empty path segments are not allowed'],
    ['/a?x=\x01', 'control characters or backslashes are not allowed'],
    ['/a%2Fb', 'encoded dots, slashes or NUL are not allowed in the path'],
    ['/a%e9', 'malformed percent-encoding'],
    ['a/b', 'path must start with /'],
  ])('%j: %s', (path, reason) => {
    expect(checkRequestPath(path)).toBe(reason);
  });
});
