import { describe, expect, it } from 'vitest';
import {
  bulkReply,
  decodeAll,
  encode,
  encodeChunks,
  encodeCommand,
  errorReply,
  integerReply,
  nullArray,
  nullBulk,
  RespErrorCode,
  type RespValue,
  resp,
  simpleString,
} from '../src/index.js';

const e2 = (v: RespValue) => encode(v, { protocol: 2 }).toString('latin1');
const e3 = (v: RespValue) => encode(v, { protocol: 3 }).toString('latin1');
/** Encodes with both protocols and returns [RESP2, RESP3]. */
const both = (v: RespValue) => [e2(v), e3(v)];

describe('encode: RESP3 natively, RESP2 downgraded the way Redis does', () => {
  it('types common to both protocols', () => {
    expect(both(resp.simple('OK'))).toEqual(['+OK\r\n', '+OK\r\n']);
    expect(both(resp.error('ERR x'))).toEqual(['-ERR x\r\n', '-ERR x\r\n']);
    expect(both(resp.integer(-42))).toEqual([':-42\r\n', ':-42\r\n']);
    expect(both(resp.integer(-(2n ** 63n)))).toEqual([
      ':-9223372036854775808\r\n',
      ':-9223372036854775808\r\n',
    ]);
    expect(both(resp.bulk('foo'))).toEqual(['$3\r\nfoo\r\n', '$3\r\nfoo\r\n']);
    expect(both(resp.bulk(''))).toEqual(['$0\r\n\r\n', '$0\r\n\r\n']);
    expect(both(resp.array([resp.bulk('a'), resp.integer(1)]))).toEqual([
      '*2\r\n$1\r\na\r\n:1\r\n',
      '*2\r\n$1\r\na\r\n:1\r\n',
    ]);
    expect(e2(resp.simple('héllo'))).toBe(Buffer.from('+héllo\r\n').toString('latin1'));
  });

  it('nulls: $-1 for bulk-ish nulls, *-1 for arrays in RESP2; _ in RESP3', () => {
    expect(both(resp.bulk(null))).toEqual(['$-1\r\n', '_\r\n']);
    expect(both(resp.array(null))).toEqual(['*-1\r\n', '_\r\n']);
    expect(both(resp.null())).toEqual(['$-1\r\n', '_\r\n']);
    expect([nullBulk().toString(), nullBulk(2).toString(), nullBulk(3).toString()]).toEqual([
      '$-1\r\n',
      '$-1\r\n',
      '_\r\n',
    ]);
    expect([nullArray().toString(), nullArray(3).toString()]).toEqual(['*-1\r\n', '_\r\n']);
  });

  it('booleans become 1/0 integers in RESP2', () => {
    expect(both(resp.boolean(true))).toEqual([':1\r\n', '#t\r\n']);
    expect(both(resp.boolean(false))).toEqual([':0\r\n', '#f\r\n']);
  });

  it('doubles and big numbers become bulk strings in RESP2', () => {
    expect(both(resp.double(1.5))).toEqual(['$3\r\n1.5\r\n', ',1.5\r\n']);
    expect(both(resp.double(Number.POSITIVE_INFINITY))).toEqual(['$3\r\ninf\r\n', ',inf\r\n']);
    expect(both(resp.double(Number.NEGATIVE_INFINITY))).toEqual(['$4\r\n-inf\r\n', ',-inf\r\n']);
    expect(both(resp.double(Number.NaN))).toEqual(['$3\r\nnan\r\n', ',nan\r\n']);
    expect(both(resp.double(-0))).toEqual(['$2\r\n-0\r\n', ',-0\r\n']);
    expect(e3(resp.double(1e300))).toBe(',1e+300\r\n');
    expect(both(resp.bignum(-123456789012345678901234567890n))).toEqual([
      '$31\r\n-123456789012345678901234567890\r\n',
      '(-123456789012345678901234567890\r\n',
    ]);
  });

  it('verbatim strings lose their format in RESP2; blob errors become simple errors', () => {
    expect(both(resp.verbatim('txt', 'Some string'))).toEqual([
      '$11\r\nSome string\r\n',
      '=15\r\ntxt:Some string\r\n',
    ]);
    expect(both(resp.blobError('SYNTAX bad\r\nthing'))).toEqual([
      '-SYNTAX bad  thing\r\n',
      '!17\r\nSYNTAX bad\r\nthing\r\n',
    ]);
  });

  it('maps flatten, sets and pushes become arrays in RESP2', () => {
    const map = resp.map([
      [resp.bulk('a'), resp.integer(1)],
      [resp.bulk('b'), resp.boolean(true)],
    ]);
    expect(both(map)).toEqual([
      '*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:1\r\n',
      '%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n#t\r\n',
    ]);
    expect(both(resp.set([resp.integer(1)]))).toEqual(['*1\r\n:1\r\n', '~1\r\n:1\r\n']);
    const message = resp.push([resp.bulk('message'), resp.bulk('chan'), resp.bulk('hi')]);
    expect(both(message)).toEqual([
      '*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$2\r\nhi\r\n',
      '>3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$2\r\nhi\r\n',
    ]);
    expect(both(resp.map([]))).toEqual(['*0\r\n', '%0\r\n']);
  });

  it('attributes are written before their value in RESP3 and dropped in RESP2', () => {
    const v: RespValue = { ...resp.integer(1), attributes: [[resp.simple('ttl'), resp.integer(5)]] };
    expect(both(resp.array([v]))).toEqual(['*1\r\n:1\r\n', '*1\r\n|1\r\n+ttl\r\n:5\r\n:1\r\n']);
    expect(decodeAll(encode(resp.array([v]), { protocol: 3 }))).toEqual([resp.array([v])]);
  });

  it('never lets CR/LF split a line', () => {
    expect(e2(resp.simple('a\r\n+b'))).toBe('+a  +b\r\n');
    expect(e3(resp.error('ERR a\nb\rc'))).toBe('-ERR a b c\r\n');
  });

  it('rejects values that cannot be represented', () => {
    const invalid = expect.objectContaining({ code: RespErrorCode.INVALID_VALUE });
    expect(() => e2(resp.integer(1.5))).toThrow(invalid);
    expect(() => e2(resp.integer(Number.NaN))).toThrow(invalid);
    expect(() => e2(resp.integer(2 ** 63))).toThrow(invalid);
    expect(() => e2(resp.integer(2n ** 63n))).toThrow(invalid);
    expect(() => e3(resp.verbatim('text', 'x'))).toThrow(invalid);
    expect(() => e3(resp.verbatim('t\u0100t', 'x'))).toThrow(invalid);
    expect(e2(resp.integer(-(2 ** 63)))).toBe(':-9223372036854775808\r\n');
    expect(e2(resp.integer(-0))).toBe(':0\r\n');
    expect(e2(resp.integer(2 ** 60))).toBe(':1152921504606846976\r\n');
  });

  it('encodeChunks passes large payloads through by reference', () => {
    const big = Buffer.alloc(100_000, 1);
    const chunks = encodeChunks(resp.array([resp.bulk('small'), resp.bulk(big), resp.integer(1)]), {
      protocol: 3,
    });
    expect(chunks).toContain(big);
    const whole = encode(resp.array([resp.bulk('small'), resp.bulk(big), resp.integer(1)]), { protocol: 3 });
    expect(Buffer.concat(chunks).equals(whole)).toBe(true);
    expect(encodeChunks(resp.bulk(big), { protocol: 2, zeroCopyMin: Number.POSITIVE_INFINITY })).toHaveLength(
      1,
    );
  });

  it('grows its buffer for large trees', () => {
    const items = Array.from({ length: 5000 }, (_, i) => resp.bulk(`value-${i}`));
    const buf = encode(resp.array(items), { protocol: 2 });
    expect(decodeAll(buf)).toEqual([resp.array(items)]);
  });
});

describe('reply helpers', () => {
  it('encodeCommand writes an array of bulk strings (UTF-8 lengths in bytes)', () => {
    expect(encodeCommand(['SET', 'k', 'v']).toString()).toBe('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n');
    expect(encodeCommand(['ECHO', 'é']).toString()).toBe('*2\r\n$4\r\nECHO\r\n$2\r\né\r\n');
    const mixed = encodeCommand(['SET', Buffer.from([0, 13, 10, 255]), 'é']);
    expect(mixed).toEqual(
      Buffer.from([
        ...Buffer.from('*3\r\n$3\r\nSET\r\n$4\r\n'),
        0,
        13,
        10,
        255,
        ...Buffer.from('\r\n$2\r\né\r\n'),
      ]),
    );
    expect(encodeCommand([]).toString()).toBe('*0\r\n');
  });

  it('simpleString, errorReply, integerReply, bulkReply', () => {
    expect(simpleString('OK').toString()).toBe('+OK\r\n');
    expect(simpleString('a\r\nb').toString()).toBe('+a  b\r\n');
    expect(errorReply('').toString()).toBe('-\r\n');
    expect(errorReply('ERR Protocol error: x').toString()).toBe('-ERR Protocol error: x\r\n');
    expect(errorReply('ERR a\r\n-INJECTED').toString()).toBe('-ERR a  -INJECTED\r\n');
    expect(integerReply(7).toString()).toBe(':7\r\n');
    expect(integerReply(-(2n ** 63n)).toString()).toBe(':-9223372036854775808\r\n');
    expect(() => integerReply(0.5)).toThrow(expect.objectContaining({ code: RespErrorCode.INVALID_VALUE }));
    expect(bulkReply('foo').toString()).toBe('$3\r\nfoo\r\n');
    expect(bulkReply(Buffer.from('\r\n')).toString()).toBe('$2\r\n\r\n\r\n');
    expect(bulkReply(new Uint8Array([1, 2]))).toEqual(Buffer.from('$2\r\n\x01\x02\r\n'));
    expect(bulkReply(null).toString()).toBe('$-1\r\n');
    expect(bulkReply(null, 3).toString()).toBe('_\r\n');
  });
});
