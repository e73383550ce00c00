import { describe, expect, it } from 'vitest';
import { joinRaw, type RespValue, rawLength, ValueSlicer } from '../src/index.js';

function slice(
  input: Buffer,
  size: number,
  joinSplitBulks?: boolean,
): Array<{ value: RespValue; raw: Buffer | Buffer[] }> {
  const out: Array<{ value: RespValue; raw: Buffer | Buffer[] }> = [];
  const slicer = new ValueSlicer({
    ...(joinSplitBulks === undefined ? {} : { joinSplitBulks }),
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

  it('leaves a bulk that spans chunks unjoined when asked (joinSplitBulks: false); bytes, types and everything else stay exact', () => {
    const verbatim = Buffer.from('=15\r\ntxt:Some string\r\n');
    const blobError = Buffer.from('!21\r\nSYNTAX invalid syntax\r\n');
    const all = Buffer.concat([input, verbatim, blobError]);
    for (const size of [1, 2, 5, 4096, all.length]) {
      const got = slice(all, size, false);
      expect(got.map((g) => joinRaw(g.raw).toString('latin1'))).toEqual(
        [...replies, verbatim, blobError].map((r) => r.toString('latin1')),
      );
      // The 20,000-byte bulk spans chunks at every size but the whole: empty, not copied.
      expect(got[2]!.value).toEqual({ type: 'bulk', value: size === all.length ? big : Buffer.alloc(0) });
      // Verbatim strings and blob errors are checked and kept whole.
      expect(got[5]!.value).toEqual({ type: 'verbatim', format: 'txt', value: Buffer.from('Some string') });
      expect(got[6]!.value).toEqual({ type: 'blobError', value: Buffer.from('SYNTAX invalid syntax') });
      expect(got[0]!.value).toEqual({ type: 'simple', value: 'OK' });
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
