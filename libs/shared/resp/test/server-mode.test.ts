import { describe, expect, it } from 'vitest';
import { asCommand, commandFromArgs, RespErrorCode, resp, splitInlineArgs } from '../src/index.js';
import { decodeBothWays, expectError, expectValues } from './split-harness.js';

const P = RespErrorCode.PROTOCOL;
const L = RespErrorCode.LIMIT_EXCEEDED;
const server = { mode: 'server' } as const;
const cmd = (...args: string[]) => resp.command(args);

function split(line: string): string[] | undefined {
  const buf = Buffer.from(line, 'latin1');
  return splitInlineArgs(buf, 0, buf.length)?.map((a) => a.toString('latin1'));
}

describe('RespDecoder (server mode): commands', () => {
  it('decodes multibulk commands', () => {
    expectValues('*1\r\n$4\r\nPING\r\n', [cmd('PING')], server);
    expectValues('*3\r\n$3\r\nSET\r\n$1\r\na\r\n$0\r\n\r\n', [cmd('SET', 'a', '')], server);
    expectValues('*2\r\n$3\r\nGET\r\n$4\r\n\r\n\r\n\r\n', [cmd('GET', '\r\n\r\n')], server);
  });

  it('decodes inline commands, with LF or CRLF endings, like redis-cli via telnet', () => {
    expectValues('PING\r\n', [cmd('PING')], server);
    expectValues('PING\n', [cmd('PING')], server);
    expectValues('  SET   a\tb  \r\n', [cmd('SET', 'a', 'b')], server);
    expectValues('SET k "a\\x41"\r\n', [cmd('SET', 'k', 'aA')], server);
    expectValues("SET k 'it\\'s'\r\n", [cmd('SET', 'k', "it's")], server);
    expectValues('ECHO "a\\"b" "" x\r\n', [cmd('ECHO', 'a"b', '', 'x')], server);
    expectValues('ECHO "line\\nbreak\\r\\t"\r\n', [cmd('ECHO', 'line\nbreak\r\t')], server);
  });

  it('ignores empty lines and empty or negative multibulk counts, as Redis does', () => {
    expectValues('\r\n\n   \r\n*0\r\n*-1\r\n*-5\r\nPING\r\n', [cmd('PING')], server);
  });

  it('treats anything not starting with * as inline, like Redis', () => {
    expectValues('+OK\r\n', [cmd('+OK')], server);
    expectValues('$3\r\nfoo\r\n', [cmd('$3'), cmd('foo')], server);
  });

  it('decodes a pipeline mixing inline and multibulk commands', () => {
    const input = 'PING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nSET k v\n*1\r\n$4\r\nQUIT\r\n';
    const out = decodeBothWays(input.repeat(20), server);
    expect(out.error).toBeUndefined();
    expect(out.values.slice(0, 4)).toEqual([cmd('PING'), cmd('GET', 'k'), cmd('SET', 'k', 'v'), cmd('QUIT')]);
    expect(out.values).toHaveLength(80);
  });

  it('reports Redis protocol errors with Redis messages', () => {
    expectError('*1\r\nx', P, "Protocol error: expected '$', got 'x'", server);
    expectError('*2\r\n$1\r\na\r\n:1\r\n', P, "Protocol error: expected '$', got ':'", server);
    expectError('*abc\r\n', P, 'Protocol error: invalid multibulk length', server);
    expectError('*-0\r\n', P, 'Protocol error: invalid multibulk length', server);
    expectError('*1\r\n$-1\r\n', P, 'Protocol error: invalid bulk length', server);
    expectError('*1\r\n$x\r\n', P, 'Protocol error: invalid bulk length', server);
    expectError('*1\r\n$?\r\n', P, 'Protocol error: invalid bulk length', server);
    expectError('SET "a\r\n', P, 'Protocol error: unbalanced quotes in request', server);
    expectError('SET "a"b\r\n', P, 'Protocol error: unbalanced quotes in request', server);
    expectError("SET 'a'b\r\n", P, 'Protocol error: unbalanced quotes in request', server);
    expectError('*1\r\n$3\r\nfooXY', P, 'Protocol error: bulk payload not terminated by CRLF', server);
  });

  it('enforces limits with Redis messages', () => {
    expectError('*1048577\r\n', L, 'Protocol error: invalid multibulk length', server);
    expectError('*1\r\n$536870913\r\n', L, 'Protocol error: invalid bulk length', server);
    expectError('*1\r\n$11\r\n', L, 'Protocol error: invalid bulk length', { ...server, maxBulkLength: 10 });
    expectError('a'.repeat(64 * 1024 + 1), L, 'Protocol error: too big inline request', server);
    expectError(`*${'1'.repeat(64 * 1024 + 1)}`, L, 'Protocol error: too big mbulk count string', server);
    expectError(
      `*1\r\n$${'1'.repeat(64 * 1024 + 1)}`,
      L,
      'Protocol error: too big bulk count string',
      server,
    );
    expect(decodeBothWays(`ECHO ${'a'.repeat(64 * 1024 - 7)}\r\n`, server).error).toBeUndefined();
  });

  it('names remembered by their bytes: same-length names alternate correctly, and a reused read buffer changes nothing', () => {
    // GET, GEX and GEO share a length and first byte, so they take turns in one remembered slot.
    for (let round = 0; round < 3; round++)
      for (const name of ['GET', 'gex', 'GeO', 'get'])
        expect(commandFromArgs([Buffer.from(name), Buffer.from('k')]).name).toBe(name.toLowerCase());
    // The name's bytes lie in a buffer the connection reuses: what is remembered is a copy.
    const read = Buffer.from('HGETALL');
    expect(commandFromArgs([read]).name).toBe('hgetall');
    read.write('HKEYSXX');
    expect(commandFromArgs([read]).name).toBe('hkeysxx');
    expect(commandFromArgs([Buffer.from('HGETALL')]).name).toBe('hgetall');
    expect(commandFromArgs([Buffer.alloc(0)]).name).toBe('');
  });

  it('asCommand lowercases the name and returns the remaining args', () => {
    const [value] = decodeBothWays('*3\r\n$3\r\nSeT\r\n$1\r\nk\r\n$1\r\nv\r\n', server).values;
    expect(asCommand(value!)).toEqual({ name: 'set', args: [Buffer.from('k'), Buffer.from('v')] });
    expect(asCommand(cmd('GET', 'app|resources-tree|a_b|1.8.3.gz'))).toEqual({
      name: 'get',
      args: [Buffer.from('app|resources-tree|a_b|1.8.3.gz')],
    });
    expect(asCommand(resp.command([Buffer.from([0xc0, 0x41])]))?.name).toBe('\u00c0a');
    // Folded the same the second time (a remembered name), and for names too long to remember.
    expect(asCommand(cmd('SeT', 'k', 'v'))?.name).toBe('set');
    expect(asCommand(cmd('GET', 'k'))?.name).toBe('get');
    expect(asCommand(cmd(`X${'Y'.repeat(40)}`))?.name).toBe(`x${'y'.repeat(40)}`);
    expect(asCommand(cmd(`X${'Y'.repeat(40)}`))?.name).toBe(`x${'y'.repeat(40)}`);
    expect(asCommand(resp.array([]))).toBeUndefined();
    expect(asCommand(resp.array(null))).toBeUndefined();
    expect(asCommand(resp.array([resp.bulk('GET'), resp.integer(1)]))).toBeUndefined();
    expect(asCommand(resp.array([resp.bulk(null)]))).toBeUndefined();
    expect(asCommand(resp.simple('PING'))).toBeUndefined();
  });
});

describe('splitInlineArgs (sdssplitargs semantics)', () => {
  it('splits on blanks and handles quotes', () => {
    expect(split('')).toEqual([]);
    expect(split('   ')).toEqual([]);
    expect(split('a b  c')).toEqual(['a', 'b', 'c']);
    expect(split('a"b c"')).toEqual(['ab c']);
    expect(split('"a b" \'c d\'')).toEqual(['a b', 'c d']);
    expect(split('""')).toEqual(['']);
  });

  it("supports the escapes of double quotes and only \\' in single quotes", () => {
    expect(split('"\\x41\\x6a\\x4A"')).toEqual(['AjJ']);
    expect(split('"\\xZZ"')).toEqual(['xZZ']);
    expect(split('"\\x4"')).toEqual(['x4']);
    expect(split('"\\n\\r\\t\\b\\a\\q\\\\"')).toEqual(['\n\r\t\b\x07q\\']);
    expect(split("'a\\'b\\n'")).toEqual(["a'b\\n"]);
    expect(split('a\\nb')).toEqual(['a\\nb']);
  });

  it('rejects unbalanced quotes and quotes followed by non-blanks', () => {
    expect(split('"abc')).toBeUndefined();
    expect(split("'abc")).toBeUndefined();
    expect(split('"abc"d')).toBeUndefined();
    expect(split("'abc'd")).toBeUndefined();
    expect(split('"abc\\"')).toBeUndefined();
    expect(split('"a"\tb')).toEqual(['a', 'b']);
  });

  it('follows C string rules: NUL ends the line, \\v and \\f only separate leading blanks', () => {
    expect(split('a\x00b c')).toEqual(['a']);
    expect(split('"a\x00b"')).toBeUndefined();
    expect(split('\x0ba\x0bb')).toEqual(['a\x0bb']);
  });
});
