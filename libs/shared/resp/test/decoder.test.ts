import { describe, expect, it } from 'vitest';
import { decodeAll, RespDecoder, RespErrorCode, type RespValue, resp } from '../src/index.js';
import { decodeBothWays, decodeChunks, expectValues, randomSplit, rng } from './split-harness.js';

const b = (s: string) => resp.bulk(s);

describe('RespDecoder (client mode): every type, as one chunk and byte by byte', () => {
  it('simple strings and errors', () => {
    expectValues('+OK\r\n', [resp.simple('OK')]);
    expectValues('+\r\n', [resp.simple('')]);
    expectValues('+héllo wörld\r\n', [resp.simple('héllo wörld')]);
    expectValues('-ERR unknown command\r\n', [resp.error('ERR unknown command')]);
    expectValues('-\r\n', [resp.error('')]);
  });

  it('integers: numbers when safe, bigints beyond, signs allowed', () => {
    expectValues(':0\r\n:-5\r\n:+7\r\n:-0\r\n:007\r\n', [
      resp.integer(0),
      resp.integer(-5),
      resp.integer(7),
      resp.integer(0),
      resp.integer(7),
    ]);
    expectValues(':9007199254740991\r\n:-9007199254740991\r\n', [
      resp.integer(Number.MAX_SAFE_INTEGER),
      resp.integer(Number.MIN_SAFE_INTEGER),
    ]);
    expectValues(':9007199254740992\r\n:9223372036854775807\r\n:-9223372036854775808\r\n', [
      resp.integer(9007199254740992n),
      resp.integer(9223372036854775807n),
      resp.integer(-9223372036854775808n),
    ]);
    const [zero] = decodeAll(Buffer.from(':-0\r\n'));
    expect(Object.is(zero?.type === 'integer' && zero.value, 0)).toBe(true);
  });

  it('bulk strings, including empty, null and binary payloads containing CRLF', () => {
    expectValues('$3\r\nfoo\r\n', [b('foo')]);
    expectValues('$0\r\n\r\n', [b('')]);
    expectValues('$-1\r\n', [resp.bulk(null)]);
    expectValues('$4\r\n\r\n\r\n\r\n', [b('\r\n\r\n')]);
    const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expectValues(Buffer.concat([Buffer.from('$256\r\n'), binary, Buffer.from('\r\n')]), [resp.bulk(binary)]);
  });

  it('arrays: empty, null, nested, heterogeneous', () => {
    expectValues('*0\r\n', [resp.array([])]);
    expectValues('*-1\r\n', [resp.array(null)]);
    expectValues('*2\r\n$1\r\na\r\n:1\r\n', [resp.array([b('a'), resp.integer(1)])]);
    expectValues('*3\r\n*1\r\n*0\r\n*-1\r\n$-1\r\n', [
      resp.array([resp.array([resp.array([])]), resp.array(null), resp.bulk(null)]),
    ]);
    expectValues('*2\r\n*2\r\n+a\r\n-b\r\n*1\r\n:3\r\n', [
      resp.array([resp.array([resp.simple('a'), resp.error('b')]), resp.array([resp.integer(3)])]),
    ]);
  });

  it('RESP3 null, booleans, doubles and big numbers', () => {
    expectValues('_\r\n#t\r\n#f\r\n', [resp.null(), resp.boolean(true), resp.boolean(false)]);
    expectValues(',1.5\r\n,-2\r\n,1e10\r\n,1.5E-3\r\n,.5\r\n,3.\r\n,+4\r\n', [
      resp.double(1.5),
      resp.double(-2),
      resp.double(1e10),
      resp.double(1.5e-3),
      resp.double(0.5),
      resp.double(3),
      resp.double(4),
    ]);
    expectValues(',inf\r\n,-inf\r\n,nan\r\n,-0\r\n', [
      resp.double(Number.POSITIVE_INFINITY),
      resp.double(Number.NEGATIVE_INFINITY),
      resp.double(Number.NaN),
      resp.double(-0),
    ]);
    expectValues('(3492890328409238509324850943850943825024385\r\n(-1\r\n(0\r\n', [
      resp.bignum(3492890328409238509324850943850943825024385n),
      resp.bignum(-1n),
      resp.bignum(0n),
    ]);
  });

  it('blob errors and verbatim strings', () => {
    expectValues('!21\r\nSYNTAX invalid syntax\r\n', [resp.blobError('SYNTAX invalid syntax')]);
    expectValues('!0\r\n\r\n', [resp.blobError('')]);
    expectValues('=15\r\ntxt:Some string\r\n', [resp.verbatim('txt', 'Some string')]);
    expectValues('=4\r\nmkd:\r\n', [resp.verbatim('mkd', '')]);
    expectValues('=11\r\ntxt:a\r\nb\r\nc\r\n', [resp.verbatim('txt', 'a\r\nb\r\nc')]);
  });

  it('maps, sets and pushes', () => {
    expectValues('%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n', [
      resp.map([
        [resp.simple('first'), resp.integer(1)],
        [resp.simple('second'), resp.integer(2)],
      ]),
    ]);
    expectValues('%0\r\n', [resp.map([])]);
    expectValues('%1\r\n*2\r\n:1\r\n:2\r\n%1\r\n_\r\n#t\r\n', [
      resp.map([
        [resp.array([resp.integer(1), resp.integer(2)]), resp.map([[resp.null(), resp.boolean(true)]])],
      ]),
    ]);
    expectValues('~3\r\n+a\r\n:1\r\n$1\r\nb\r\n', [resp.set([resp.simple('a'), resp.integer(1), b('b')])]);
    expectValues('>3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$0\r\n\r\n', [
      resp.push([b('message'), b('chan'), b('')]),
    ]);
  });

  it('attributes attach to the value they precede, at any depth, without counting as elements', () => {
    const attrs: [RespValue, RespValue][] = [
      [
        resp.simple('key-popularity'),
        resp.map([
          [b('a'), resp.double(0.1923)],
          [b('b'), resp.double(0.0012)],
        ]),
      ],
    ];
    const top: RespValue = {
      ...resp.array([resp.integer(2039123), resp.integer(9543892)]),
      attributes: attrs,
    };
    expectValues(
      '|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n',
      [top],
    );
    const ttl: [RespValue, RespValue][] = [[resp.simple('ttl'), resp.integer(3600)]];
    expectValues('*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n$1\r\nx\r\n', [
      resp.array([{ ...resp.integer(1), attributes: ttl }, b('x')]),
    ]);
    // Two attributes in a row merge; an attribute on a bulk that spans chunks still attaches.
    expectValues('|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n$3\r\nfoo\r\n', [
      {
        ...b('foo'),
        attributes: [
          [resp.simple('a'), resp.integer(1)],
          [resp.simple('b'), resp.integer(2)],
        ],
      },
    ]);
    // An attribute whose values carry attributes themselves.
    expectValues('|1\r\n+k\r\n|1\r\n+n\r\n:1\r\n+v\r\n#t\r\n', [
      {
        ...resp.boolean(true),
        attributes: [
          [resp.simple('k'), { ...resp.simple('v'), attributes: [[resp.simple('n'), resp.integer(1)]] }],
        ],
      },
    ]);
    // An empty attribute is still an attribute.
    expectValues('|0\r\n:5\r\n', [{ ...resp.integer(5), attributes: [] }]);
  });

  it('streamed strings and aggregates', () => {
    expectValues('$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n', [b('Hello word')]);
    expectValues('$?\r\n;0\r\n', [b('')]);
    expectValues('*?\r\n:1\r\n:2\r\n.\r\n', [resp.array([resp.integer(1), resp.integer(2)])]);
    expectValues('%?\r\n+a\r\n:1\r\n.\r\n', [resp.map([[resp.simple('a'), resp.integer(1)]])]);
    expectValues('~?\r\n.\r\n', [resp.set([])]);
    expectValues('*?\r\n*?\r\n$?\r\n;2\r\nab\r\n;0\r\n.\r\n*1\r\n:1\r\n.\r\n', [
      resp.array([resp.array([b('ab')]), resp.array([resp.integer(1)])]),
    ]);
  });

  it('decodes a pipeline of mixed types in order, whatever the chunking', () => {
    const input =
      '+OK\r\n:1\r\n$3\r\nbar\r\n$-1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n-ERR x\r\n_\r\n%1\r\n+k\r\n+v\r\n>2\r\n+p\r\n:9\r\n';
    const out = decodeBothWays(input.repeat(50));
    expect(out.error).toBeUndefined();
    expect(out.values).toHaveLength(450);
    expect(out.values.slice(0, 9)).toEqual([
      resp.simple('OK'),
      resp.integer(1),
      b('bar'),
      resp.bulk(null),
      resp.array([b('a'), b('b')]),
      resp.error('ERR x'),
      resp.null(),
      resp.map([[resp.simple('k'), resp.simple('v')]]),
      resp.push([resp.simple('p'), resp.integer(9)]),
    ]);
  });

  it('handles a long pipeline split at random points', () => {
    const next = rng(7);
    const parts: string[] = [];
    const expected: RespValue[] = [];
    for (let i = 0; i < 600; i++) {
      const payload = 'x'.repeat(Math.floor(next() * 300));
      parts.push(`$${payload.length}\r\n${payload}\r\n:${i}\r\n`);
      expected.push(b(payload), resp.integer(i));
    }
    const buf = Buffer.from(parts.join(''));
    for (const max of [1, 7, 64, 4096]) {
      const out = decodeChunks(randomSplit(buf, next, max));
      expect(out.error).toBeUndefined();
      expect(out.values).toEqual(expected);
    }
  });

  it('emits bulk strings inside one chunk as zero-copy slices of it', () => {
    const chunk = Buffer.from('$5\r\nhello\r\n*1\r\n$3\r\nabc\r\n');
    const values = decodeAll(chunk);
    const first = values[0]!;
    const nested = values[1]!;
    expect(first.type === 'bulk' && first.value?.buffer).toBe(chunk.buffer);
    expect(
      nested.type === 'array' && nested.value?.[0]?.type === 'bulk' && nested.value[0].value?.buffer,
    ).toBe(chunk.buffer);
  });

  it('reports whether a partial value is buffered', () => {
    const values: RespValue[] = [];
    const d = new RespDecoder({ onValue: (v) => values.push(v), onError: () => undefined });
    expect(d.pending).toBe(false);
    d.push(Buffer.from('*2\r\n:1\r\n'));
    expect(d.pending).toBe(true);
    d.push(Buffer.from(':2\r'));
    expect(d.pending).toBe(true);
    d.push(Buffer.from('\n'));
    expect(d.pending).toBe(false);
    expect(values).toEqual([resp.array([resp.integer(1), resp.integer(2)])]);
    d.push(Buffer.from('|1\r\n+a\r\n+b\r\n'));
    expect(d.pending).toBe(true);
  });

  it('ignores empty chunks', () => {
    const out = decodeChunks([Buffer.alloc(0), Buffer.from('+O'), Buffer.alloc(0), Buffer.from('K\r\n')]);
    expect(out.values).toEqual([resp.simple('OK')]);
  });

  it('lets exceptions from onValue propagate and then ignores input', () => {
    let calls = 0;
    const d = new RespDecoder({
      onValue: () => {
        calls++;
        throw new Error('boom');
      },
      onError: () => undefined,
    });
    expect(() => d.push(Buffer.from(':1\r\n:2\r\n'))).toThrow('boom');
    d.push(Buffer.from(':3\r\n'));
    expect(calls).toBe(1);
  });

  it('refuses re-entrant push from onValue', () => {
    const d: RespDecoder = new RespDecoder({
      onValue: () => d.push(Buffer.from(':2\r\n')),
      onError: () => undefined,
    });
    expect(() => d.push(Buffer.from(':1\r\n'))).toThrow(/must not be called from onValue/);
  });

  it('can be reset after a failure', () => {
    const values: RespValue[] = [];
    const d = new RespDecoder({ onValue: (v) => values.push(v), onError: () => undefined });
    d.push(Buffer.from('?'));
    expect(d.error?.code).toBe(RespErrorCode.PROTOCOL);
    d.reset();
    expect(d.error).toBeUndefined();
    d.push(Buffer.from('+OK\r\n'));
    expect(values).toEqual([resp.simple('OK')]);
  });

  it('decodeAll reports truncated input', () => {
    expect(() => decodeAll(Buffer.from('$3\r\nfo'))).toThrow(
      expect.objectContaining({ code: RespErrorCode.INCOMPLETE }),
    );
    expect(() => decodeAll(Buffer.from('x'))).toThrow(
      expect.objectContaining({ code: RespErrorCode.PROTOCOL }),
    );
  });
});
