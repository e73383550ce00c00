import { describe, expect, it } from 'vitest';
import { RespDecoder, RespError, RespErrorCode, type RespValue, resp } from '../src/index.js';
import { decodeBothWays, expectError } from './split-harness.js';

const P = RespErrorCode.PROTOCOL;
const L = RespErrorCode.LIMIT_EXCEEDED;

describe('RespDecoder (client mode): protocol errors', () => {
  it('rejects unknown and misplaced type bytes at once', () => {
    expectError('x', P, "Protocol error: unexpected type byte 'x'");
    expectError('\x00', P, "Protocol error: unexpected type byte '\\x00'");
    expectError('\r\n', P, "Protocol error: unexpected type byte '\\x0d'");
    expectError(';3\r\nabc\r\n', P, "Protocol error: unexpected type byte ';'");
    expectError('.\r\n', P, "Protocol error: unexpected type byte '.'");
    expectError('*1\r\n.\r\n', P, "Protocol error: unexpected type byte '.'");
    expectError('$?\r\n+OK\r\n', P, "Protocol error: expected ';', got '+'");
  });

  it('rejects malformed bulk lengths (strict like Redis string2ll)', () => {
    for (const header of ['$abc', '$', '$-2', '$-0', '$01', '$+1', '$ 1', '$1 ', '$1.0', '$0x1', '$-']) {
      expectError(`${header}\r\n`, P, 'Protocol error: invalid bulk length');
    }
    expectError('!-1\r\n', P, 'Protocol error: invalid bulk length');
    expectError('=-1\r\n', P, 'Protocol error: invalid bulk length');
    expectError('$?\r\n;-1\r\n', P, 'Protocol error: invalid bulk length');
  });

  it('rejects malformed aggregate counts', () => {
    for (const header of ['*x', '*', '*-2', '*01', '%-1', '~-1', '>-1', '|-1', '%x', '*1a']) {
      expectError(`${header}\r\n`, P, 'Protocol error: invalid multibulk length');
    }
  });

  it('rejects malformed scalars', () => {
    expectError(':abc\r\n', P, 'Protocol error: invalid integer');
    expectError(':\r\n', P, 'Protocol error: invalid integer');
    expectError(':-\r\n', P, 'Protocol error: invalid integer');
    expectError(':1.5\r\n', P, 'Protocol error: invalid integer');
    expectError(':9223372036854775808\r\n', P, 'Protocol error: invalid integer');
    expectError(':-9223372036854775809\r\n', P, 'Protocol error: invalid integer');
    expectError('#x\r\n', P, 'Protocol error: invalid boolean');
    expectError('#tt\r\n', P, 'Protocol error: invalid boolean');
    expectError('#\r\n', P, 'Protocol error: invalid boolean');
    expectError(',abc\r\n', P, 'Protocol error: invalid double');
    expectError(',\r\n', P, 'Protocol error: invalid double');
    expectError(',0x10\r\n', P, 'Protocol error: invalid double');
    expectError(',Infinity\r\n', P, 'Protocol error: invalid double');
    expectError('(1.5\r\n', P, 'Protocol error: invalid big number');
    expectError('(\r\n', P, 'Protocol error: invalid big number');
    expectError('( 1\r\n', P, 'Protocol error: invalid big number');
    expectError('_x\r\n', P, 'Protocol error: invalid null');
    expectError('=3\r\ntxt\r\n', P, 'Protocol error: invalid verbatim string');
    expectError('=5\r\ntxtab\r\n', P, 'Protocol error: invalid verbatim string');
    expectError('*?\r\n.x\r\n', P, 'Protocol error: invalid end of streamed aggregate');
    expectError('%?\r\n+k\r\n.\r\n', P, 'Protocol error: streamed map ended after a key');
  });

  it('requires CRLF after lines and bulk payloads', () => {
    expectError('+OK\rX\r\n', P, 'Protocol error: invalid line terminator');
    expectError('+O\nK\r\n', P, 'Protocol error: invalid line terminator');
    expectError('-E\nRR\r\n', P, 'Protocol error: invalid line terminator');
    expectError(':1\r\r\n', P, 'Protocol error: invalid line terminator');
    expectError('$3\r\nfooXY', P, 'Protocol error: bulk payload not terminated by CRLF');
    expectError('$3\r\nfoo\rX', P, 'Protocol error: bulk payload not terminated by CRLF');
    expectError('$3\r\nfoo\n\r', P, 'Protocol error: bulk payload not terminated by CRLF');
    expectError('$0\r\nX', P, 'Protocol error: bulk payload not terminated by CRLF');
    expectError('!3\r\nabcd\r\n', P, 'Protocol error: bulk payload not terminated by CRLF');
  });

  it('poisons the decoder: values before the error are delivered, nothing after, one onError', () => {
    const out = decodeBothWays('+a\r\n*2\r\n:1\r\n:2\r\n?+b\r\n');
    expect(out.values).toEqual([resp.simple('a'), resp.array([resp.integer(1), resp.integer(2)])]);
    expect(out.error?.message).toBe("Protocol error: unexpected type byte '?'");

    const values: RespValue[] = [];
    const errors: RespError[] = [];
    const d = new RespDecoder({ onValue: (v) => values.push(v), onError: (e) => errors.push(e) });
    d.push(Buffer.from('$x\r\n'));
    d.push(Buffer.from('+OK\r\n'));
    d.push(Buffer.from('?'));
    expect(values).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(RespError);
    expect(d.error).toBe(errors[0]);
    expect(d.pending).toBe(false);
  });
});

describe('RespDecoder (client mode): limits', () => {
  it('bulk length above maxBulkLength', () => {
    expectError('$11\r\n', L, 'Protocol error: invalid bulk length', { maxBulkLength: 10 });
    expectError('$10\r\n0123456789\r\n$11\r\n', L, 'Protocol error: invalid bulk length', {
      maxBulkLength: 10,
    });
    expectError('=15\r\n', L, 'Protocol error: invalid bulk length', { maxBulkLength: 10 });
    expectError('!15\r\n', L, 'Protocol error: invalid bulk length', { maxBulkLength: 10 });
    expectError('$99999999999999999999999999\r\n', L, 'Protocol error: invalid bulk length');
    // A streamed string is limited by its total length, not per chunk.
    expectError('$?\r\n;6\r\nabcdef\r\n;5\r\n', L, 'Protocol error: invalid bulk length', {
      maxBulkLength: 10,
    });
  });

  it('aggregate length above maxArrayLength (maps count keys and values)', () => {
    expectError('*11\r\n', L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expectError('~11\r\n', L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expectError('>11\r\n', L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expectError('%6\r\n', L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expectError('|6\r\n', L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expectError('*1048577\r\n', L, 'Protocol error: invalid multibulk length');
    const streamed = `*?\r\n${':1\r\n'.repeat(11)}.\r\n`;
    expectError(streamed, L, 'Protocol error: invalid multibulk length', { maxArrayLength: 10 });
    expect(decodeBothWays('%5\r\n', { maxArrayLength: 10 }).error).toBeUndefined();
  });

  it('nesting deeper than maxDepth', () => {
    const nested = (depth: number) => `${'*1\r\n'.repeat(depth)}:1\r\n`;
    expect(decodeBothWays(nested(32)).error).toBeUndefined();
    expectError(nested(33), L, 'Protocol error: too many nested aggregates');
    expectError(nested(4), L, 'Protocol error: too many nested aggregates', { maxDepth: 3 });
    expectError(
      `*1\r\n*1\r\n|1\r\n+k\r\n+v\r\n*1\r\n:1\r\n`,
      L,
      'Protocol error: too many nested aggregates',
      {
        maxDepth: 2,
      },
    );
    // Empty aggregates never sit on the stack, so they do not count.
    expect(decodeBothWays(`${'*1\r\n'.repeat(3)}*0\r\n`, { maxDepth: 3 }).error).toBeUndefined();
  });

  it('header and number lines above maxInlineLength, simple strings above maxBulkLength', () => {
    expectError(`:${'1'.repeat(70_000)}\r\n`, L, 'Protocol error: line too long');
    expectError(`$${'1'.repeat(70_000)}`, L, 'Protocol error: line too long');
    expectError(`*${'1'.repeat(65)}`, L, 'Protocol error: line too long', { maxInlineLength: 64 });
    // A simple string may be longer than maxInlineLength, up to maxBulkLength.
    expect(decodeBothWays(`+${'a'.repeat(100)}\r\n`, { maxInlineLength: 64 }).values).toEqual([
      resp.simple('a'.repeat(100)),
    ]);
    expectError(`+${'a'.repeat(11)}`, L, 'Protocol error: line too long', { maxBulkLength: 10 });
    expect(decodeBothWays(`+${'a'.repeat(10)}\r\n`, { maxBulkLength: 10 }).error).toBeUndefined();
  });

  it('does not allocate an announced bulk length up front; memory follows the bytes received', () => {
    let values = 0;
    const d = new RespDecoder({ onValue: () => values++, onError: (e) => expect.fail(e.message) });
    const before = process.memoryUsage().arrayBuffers;
    d.push(Buffer.from('$536870912\r\n'));
    const piece = Buffer.alloc(4096, 0x61);
    for (let i = 0; i < 256; i++) d.push(piece);
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(grown).toBeLessThan(64 * 1024 * 1024);
    expect(d.pending).toBe(true);
    expect(values).toBe(0);
  });

  it('does not preallocate announced aggregate sizes', () => {
    const d = new RespDecoder({ onValue: () => undefined, onError: (e) => expect.fail(e.message) });
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 32; i++) d.push(Buffer.from('*1048576\r\n:1\r\n'));
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 1024 * 1024);
  });
});
