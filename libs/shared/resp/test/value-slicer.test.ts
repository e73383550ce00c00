import { describe, expect, it } from 'vitest';
import { joinRaw, type RespValue, rawLength, ValueSlicer } from '../src/index.js';

function slice(input: Buffer, size: number): Array<{ value: RespValue; raw: Buffer | Buffer[] }> {
  const out: Array<{ value: RespValue; raw: Buffer | Buffer[] }> = [];
  const slicer = new ValueSlicer({
    onValue: (value, raw) => out.push({ value, raw }),
    onError: (err) => {
      throw err;
    },
  });
  for (let off = 0; off < input.length; off += size) slicer.push(input.subarray(off, off + size));
  return out;
}

describe('ValueSlicer', () => {
  const big = Buffer.alloc(20_000, 'x');
  const replies = [
    Buffer.from('+OK\r\n'),
    Buffer.from('*3\r\n:1\r\n*2\r\n$1\r\na\r\n*0\r\n_\r\n'),
    Buffer.concat([Buffer.from(`$${big.length}\r\n`), big, Buffer.from('\r\n')]),
    Buffer.from('%1\r\n+k\r\n>2\r\n$1\r\na\r\n#t\r\n'),
    Buffer.from('-ERR no\r\n'),
  ];
  const input = Buffer.concat(replies);

  it('hands each value over as the bytes it came in, however the input is split (down to single bytes)', () => {
    for (const size of [1, 2, 5, 4096, input.length]) {
      const got = slice(input, size);
      expect(got.map((g) => joinRaw(g.raw).toString('latin1'))).toEqual(
        replies.map((r) => r.toString('latin1')),
      );
      expect(got.map((g) => rawLength(g.raw))).toEqual(replies.map((r) => r.length));
      expect(got[2]!.value).toEqual({ type: 'bulk', value: big });
    }
  });

  it('does not copy a value that lies within one chunk: it is a view of that chunk', () => {
    const got = slice(input, input.length);
    for (const g of got) {
      expect(Buffer.isBuffer(g.raw)).toBe(true);
      expect((g.raw as Buffer).buffer).toBe(input.buffer);
    }
  });

  it('gives a value spanning chunks as its pieces, in order, without joining them', () => {
    const got = slice(input, 1000);
    expect(Array.isArray(got[2]!.raw)).toBe(true);
    expect((got[2]!.raw as Buffer[]).every((p) => p.buffer === input.buffer)).toBe(true);
  });

  it('once stopped, hands nothing more over, not even the rest of the chunk being read', () => {
    const seen: string[] = [];
    const slicer: ValueSlicer = new ValueSlicer({
      onValue: (v, raw) => {
        seen.push(joinRaw(raw).toString('latin1'));
        if (v.type === 'simple' && v.value === 'STOP') slicer.stop();
      },
      onError: () => undefined,
    });
    slicer.push(Buffer.from('+a\r\n+STOP\r\n+b\r\n+c'));
    slicer.push(Buffer.from('\r\n+d\r\n'));
    expect(seen).toEqual(['+a\r\n', '+STOP\r\n']);
  });

  it('reports malformed input once and ignores what follows', () => {
    const errors: string[] = [];
    const values: RespValue[] = [];
    const slicer = new ValueSlicer({
      onValue: (v) => values.push(v),
      onError: (err) => errors.push(err.message),
    });
    slicer.push(Buffer.from('+a\r\n!x\r\n+b\r\n'));
    slicer.push(Buffer.from('+c\r\n'));
    expect(values).toEqual([{ type: 'simple', value: 'a' }]);
    expect(errors).toHaveLength(1);
  });
});
