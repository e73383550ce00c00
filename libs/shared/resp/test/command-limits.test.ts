import { describe, expect, it } from 'vitest';
import { encodeCommand, RespDecoder, type RespDecoderLimits, RespErrorCode, resp } from '../src/index.js';
import { bytewise, decodeBothWays, randomSplit, rng } from './split-harness.js';

const server = { mode: 'server' } as const;
const L = RespErrorCode.LIMIT_EXCEEDED;

interface Run {
  commands: string[][];
  error: { message: string; limit: string | undefined } | undefined;
  /** Every call of the admit hook, in order. */
  admitted: Array<[number, number]>;
  /** Chunks pushed before the error was reported (how far the decoder let the peer get). */
  pushedBeforeError: number;
}

function run(
  chunks: Buffer[],
  limits: RespDecoderLimits,
  admit?: (bytes: number, args: number) => boolean,
  onCommand?: (args: Buffer[], d: RespDecoder) => void,
): Run {
  const out: Run = { commands: [], error: undefined, admitted: [], pushedBeforeError: 0 };
  const d: RespDecoder = new RespDecoder({
    ...limits,
    mode: 'server',
    onCommand: (args) => {
      out.commands.push(args.map((a) => a.toString('latin1')));
      onCommand?.(args, d);
    },
    admit: (bytes, args) => {
      out.admitted.push([bytes, args]);
      return admit ? admit(bytes, args) : true;
    },
    onError: (e) => {
      out.error = { message: e.message, limit: e.limit };
    },
  });
  for (const c of chunks) {
    if (out.error !== undefined) break;
    out.pushedBeforeError++;
    d.push(c);
  }
  return out;
}

describe('server-mode limits are checked on what headers announce, before the payload', () => {
  it('refuses a multibulk count over the limit at its header: no argument is read or kept', () => {
    const header = Buffer.from('*1048576\r\n');
    const r = run([header, Buffer.from('$1\r\na\r\n'.repeat(1000))], { maxArrayLength: 10 });
    expect(r.error).toEqual({ message: 'Protocol error: invalid multibulk length', limit: 'maxArrayLength' });
    // Failed on the header alone; the arguments behind it were never pushed.
    expect(r.pushedBeforeError).toBe(1);
    expect(r.admitted).toEqual([]);
    expect(decodeBothWays('*11\r\n', { ...server, maxArrayLength: 10 }).error).toEqual({
      code: L,
      message: 'Protocol error: invalid multibulk length',
    });
    expect(decodeBothWays(encodeCommand(Array(10).fill('a')), { ...server, maxArrayLength: 10 }).error).toBe(
      undefined,
    );
  });

  it('refuses a command whose announced size exceeds maxCommandBytes at the header that announces it', () => {
    const head = Buffer.from('*2\r\n$3\r\nSET\r\n$100\r\n');
    const r = run([head, Buffer.alloc(100, 0x61), Buffer.from('\r\n')], { maxCommandBytes: 64 });
    expect(r.error).toEqual({ message: 'Protocol error: command too large', limit: 'maxCommandBytes' });
    expect(r.pushedBeforeError).toBe(1);
    // The exact size passes, one byte less fails, whole and byte by byte.
    const cmd = encodeCommand(['SET', 'key', 'v'.repeat(40)]);
    expect(decodeBothWays(cmd, { ...server, maxCommandBytes: cmd.length }).values).toEqual([
      resp.command(['SET', 'key', 'v'.repeat(40)]),
    ]);
    expect(decodeBothWays(cmd, { ...server, maxCommandBytes: cmd.length - 1 }).error).toEqual({
      code: L,
      message: 'Protocol error: command too large',
    });
  });

  it('holds a long header line to the room left in the command, whichever limit it crosses first', () => {
    const opts = { ...server, maxCommandBytes: 20, maxInlineLength: 100 };
    expect(decodeBothWays(`*1\r\n$${'1'.repeat(30)}`, opts).error?.message).toBe(
      'Protocol error: command too large',
    );
    expect(
      decodeBothWays(`*1\r\n$${'1'.repeat(30)}`, { ...server, maxCommandBytes: 1000, maxInlineLength: 20 })
        .error?.message,
    ).toBe('Protocol error: too big bulk count string');
  });

  it('applies the limits to inline commands: line length, command size and argument count', () => {
    expect(decodeBothWays('PING a b c\r\n', { ...server, maxArrayLength: 3 }).error?.message).toBe(
      'Protocol error: invalid multibulk length',
    );
    expect(decodeBothWays('PING a b\r\n', { ...server, maxArrayLength: 3 }).values).toHaveLength(1);
    expect(
      decodeBothWays(`AUTH ${'x'.repeat(40)}\r\n`, { ...server, maxCommandBytes: 32 }).error?.message,
    ).toBe('Protocol error: command too large');
    expect(
      decodeBothWays(`AUTH ${'x'.repeat(40)}\r\n`, { ...server, maxCommandBytes: 32, maxInlineLength: 32 })
        .error?.message,
    ).toBe('Protocol error: too big inline request');
  });

  it('asks admit before keeping a command past the chunk, with its announced size and count', () => {
    const cmd = encodeCommand(['SET', 'k', 'v'.repeat(1000)]);
    // Within one chunk: nothing is kept, nothing to admit.
    expect(run([cmd], {}).admitted).toEqual([]);
    // Split after the third header: the whole 1000-byte value already counts.
    const cut = cmd.indexOf('$1000\r\n') + 7;
    const split = run([cmd.subarray(0, cut), cmd.subarray(cut)], {});
    expect(split.admitted).toEqual([[cmd.length, 3]]);
    expect(split.commands).toEqual([['SET', 'k', 'v'.repeat(1000)]]);
    // Byte by byte: asked after every byte, never with less than before, never more than the command.
    const bytes = run(bytewise(cmd), {});
    expect(bytes.commands).toHaveLength(1);
    expect(bytes.admitted).toHaveLength(cmd.length - 1);
    for (let i = 1; i < bytes.admitted.length; i++)
      expect(bytes.admitted[i]![0]).toBeGreaterThanOrEqual(bytes.admitted[i - 1]![0]);
    expect(Math.max(...bytes.admitted.map(([b]) => b))).toBe(cmd.length);
    // A refusal fails the decoder with the 'admit' limit, before the payload is read.
    const refused = run([cmd.subarray(0, cut), cmd.subarray(cut)], {}, (b) => b < 500);
    expect(refused.error).toEqual({ message: 'Protocol error: command refused', limit: 'admit' });
    expect(refused.pushedBeforeError).toBe(1);
  });

  it('changes limits between commands: tight before AUTH, loose after, in one pipeline', () => {
    const pre = { maxArrayLength: 3, maxCommandBytes: 64, maxBulkLength: 64 };
    const input = Buffer.concat([
      encodeCommand(['AUTH', 'pw']),
      encodeCommand(['MGET', 'a', 'b', 'c', 'd', 'e']),
      encodeCommand(['SET', 'k', 'v'.repeat(100)]),
    ]);
    const loosen = (args: Buffer[], d: RespDecoder) => {
      if (args[0]!.toString() === 'AUTH')
        d.setLimits({ maxArrayLength: 100, maxCommandBytes: 1024, maxBulkLength: 512 });
    };
    for (const chunks of [[input], bytewise(input), randomSplit(input, rng(7))]) {
      const r = run(chunks, pre, undefined, loosen);
      expect(r.error).toBeUndefined();
      expect(r.commands.map((c) => c[0])).toEqual(['AUTH', 'MGET', 'SET']);
    }
    // Without AUTH first, the same pipeline fails at the second command's header.
    const r = run([input.subarray(encodeCommand(['AUTH', 'pw']).length)], pre);
    expect(r.error?.limit).toBe('maxArrayLength');
    expect(r.commands).toEqual([]);
  });

  it('reports the size of the command in progress, and nothing between commands', () => {
    const d = new RespDecoder({
      mode: 'server',
      onCommand: () => undefined,
      onError: (e) => expect.fail(e.message),
    });
    d.push(Buffer.from('*2\r\n$3\r\nGET\r\n$10\r\nab'));
    expect(d.commandBytes).toBe(encodeCommand(['GET', 'x'.repeat(10)]).length);
    d.push(Buffer.from('cdefghij\r\n'));
    expect(d.commandBytes).toBe(0);
    expect(d.pending).toBe(false);
  });

  it('emits the same commands through onCommand as through onValue', () => {
    const input = Buffer.concat([encodeCommand(['SET', 'a', 'b']), Buffer.from('PING "x y"\r\n')]);
    const viaValue = decodeBothWays(input, server).values;
    expect(viaValue).toEqual([resp.command(['SET', 'a', 'b']), resp.command(['PING', 'x y'])]);
    expect(run([input], {}).commands).toEqual([
      ['SET', 'a', 'b'],
      ['PING', 'x y'],
    ]);
  });
});
