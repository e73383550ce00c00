import { describe, expect, it } from 'vitest';
import {
  encode,
  encodeCommand,
  type RespDecoderLimits,
  RespErrorCode,
  type RespPairs,
  type RespProtocol,
  type RespValue,
  resp,
} from '../src/index.js';
import { bytewise, type DecodeOutcome, decodeChunks, randomSplit, rng } from './split-harness.js';

// Seeded so any failure reproduces (set RESP_FUZZ_SEED to explore others); inputs are in assertion messages.
const SEED = Number(process.env.RESP_FUZZ_SEED ?? 0x5eed);

/** Canonical text of an outcome: cheap to compare in a tight loop, readable when it differs. */
function show(v: RespValue): string {
  const attrs = v.attributes === undefined ? '' : `|${pairs(v.attributes)}|`;
  switch (v.type) {
    case 'bulk':
    case 'blobError':
      return `${attrs}${v.type}(${v.value === null ? 'nil' : v.value.toString('hex')})`;
    case 'verbatim':
      return `${attrs}verbatim(${v.format},${v.value.toString('hex')})`;
    case 'array':
    case 'set':
    case 'push':
      return `${attrs}${v.type}[${v.value === null ? 'nil' : v.value.map(show).join(',')}]`;
    case 'map':
      return `${attrs}map{${pairs(v.value)}}`;
    case 'null':
      return `${attrs}null`;
    case 'integer':
      return `${attrs}integer(${typeof v.value}:${v.value})`;
    case 'double':
      return `${attrs}double(${Object.is(v.value, -0) ? '-0' : v.value})`;
    default:
      return `${attrs}${v.type}(${JSON.stringify(String(v.value))})`;
  }
}
const pairs = (p: RespPairs) => p.map(([k, v]) => `${show(k)}=>${show(v)}`).join(',');
const showOutcome = (o: DecodeOutcome) =>
  `${o.values.map(show).join(' ')} ${o.error ? `${o.error.code}:${o.error.message}` : ''} pending=${o.pending}`;

const ALPHABET = [
  ...'+-:$*_#,(!=%~|>;.?',
  '\r',
  '\n',
  '\r\n',
  '\r\n',
  ...'0123456789',
  '-1',
  '1',
  't',
  'f',
  'a',
  ' ',
  '"',
  "'",
  '\\',
  'x',
  'inf',
  'nan',
  'txt:',
];

function randomBytes(next: () => number, maxLen: number): Buffer {
  const parts: Buffer[] = [];
  const n = Math.floor(next() * maxLen);
  for (let i = 0; i < n; i++) {
    if (next() < 0.15) parts.push(Buffer.from([Math.floor(next() * 256)]));
    else parts.push(Buffer.from(ALPHABET[Math.floor(next() * ALPHABET.length)]!, 'latin1'));
  }
  return Buffer.concat(parts);
}

function randomOptions(next: () => number): RespDecoderLimits {
  const options: RespDecoderLimits = { mode: next() < 0.3 ? 'server' : 'client' };
  if (next() < 0.3) {
    options.maxBulkLength = Math.floor(next() * 20);
    options.maxArrayLength = Math.floor(next() * 6);
    options.maxInlineLength = Math.floor(next() * 20);
    options.maxDepth = 1 + Math.floor(next() * 4);
    if (options.mode === 'server') options.maxCommandBytes = Math.floor(next() * 40);
  }
  return options;
}

/** Decodes whole and in random splits; both must agree, and only typed errors may come out. */
function check(buf: Buffer, options: RespDecoderLimits, next: () => number): DecodeOutcome {
  const context = () => `input ${JSON.stringify(buf.toString('latin1'))} options ${JSON.stringify(options)}`;
  let whole: DecodeOutcome;
  let split: DecodeOutcome;
  try {
    whole = decodeChunks([buf], options);
    split = decodeChunks(randomSplit(buf, next, 1 + Math.floor(next() * 8)), options);
  } catch (err) {
    throw new Error(`decoder threw ${String(err)} on ${context()}`);
  }
  if (showOutcome(split) !== showOutcome(whole)) {
    expect(showOutcome(split), context()).toBe(showOutcome(whole));
  }
  if (whole.error !== undefined) {
    if (whole.error.code !== RespErrorCode.PROTOCOL && whole.error.code !== RespErrorCode.LIMIT_EXCEEDED) {
      expect.fail(`unexpected error code ${whole.error.code} on ${context()}`);
    }
    if (!whole.error.message.startsWith('Protocol error: ')) expect.fail(`odd message on ${context()}`);
  }
  return whole;
}

const TEXT = ['a', 'b', 'Z', '0', ' ', 'é', '€', '😀', ':', '"', '\t', '\u0000'];

function randomText(next: () => number): string {
  let s = '';
  const n = Math.floor(next() * 12);
  for (let i = 0; i < n; i++) s += TEXT[Math.floor(next() * TEXT.length)];
  return s;
}

function randomBuffer(next: () => number): Buffer {
  const n = Math.floor(next() * 24);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = next() < 0.2 ? (next() < 0.5 ? 13 : 10) : Math.floor(next() * 256);
  return b;
}

function randomInteger(next: () => number): number | bigint {
  const r = next();
  if (r < 0.5) return Math.floor((next() - 0.5) * 2000);
  if (r < 0.7) return Math.floor((next() - 0.5) * 2 * Number.MAX_SAFE_INTEGER);
  if (r < 0.8) return [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER][Math.floor(next() * 2)]!;
  const big = (BigInt(Math.floor(next() * 2 ** 31)) << 32n) | BigInt(Math.floor(next() * 2 ** 32));
  const v = next() < 0.5 ? -big - 1n : big;
  // Decoders give numbers for safe integers, so the model does too.
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function randomDouble(next: () => number): number {
  const specials = [
    0,
    -0,
    1.5,
    -2.25,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    5e-324,
    1e21,
  ];
  if (next() < 0.3) return specials[Math.floor(next() * specials.length)]!;
  return (next() - 0.5) * 10 ** Math.floor((next() - 0.5) * 40);
}

const SCALARS = [
  'simple',
  'error',
  'integer',
  'bulk',
  'null',
  'boolean',
  'double',
  'bignum',
  'blobError',
  'verbatim',
];
const AGGREGATES = ['array', 'map', 'set', 'push'];

function randomValue(next: () => number, depth: number, resp3: boolean): RespValue {
  const kinds = depth >= 3 ? SCALARS : [...SCALARS, ...AGGREGATES, ...AGGREGATES];
  const kind = kinds[Math.floor(next() * kinds.length)];
  const items = () =>
    Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1, resp3));
  let v: RespValue;
  switch (kind) {
    case 'simple':
      v = resp.simple(randomText(next));
      break;
    case 'error':
      v = resp.error(`ERR ${randomText(next)}`);
      break;
    case 'integer':
      v = resp.integer(randomInteger(next));
      break;
    case 'bulk':
      v = resp.bulk(next() < 0.1 ? null : randomBuffer(next));
      break;
    case 'null':
      v = resp.null();
      break;
    case 'boolean':
      v = resp.boolean(next() < 0.5);
      break;
    case 'double':
      v = resp.double(randomDouble(next));
      break;
    case 'bignum':
      v = resp.bignum(BigInt(Math.floor((next() - 0.5) * 1e15)) * 10n ** BigInt(Math.floor(next() * 30)));
      break;
    case 'blobError':
      v = resp.blobError(Buffer.from(`ERR ${randomText(next)}${next() < 0.3 ? '\r\nmore' : ''}`));
      break;
    case 'verbatim':
      v = resp.verbatim(next() < 0.5 ? 'txt' : 'mkd', randomBuffer(next));
      break;
    case 'array':
      v = resp.array(next() < 0.1 ? null : items());
      break;
    case 'map':
      v = resp.map(
        Array.from({ length: Math.floor(next() * 3) }, (): [RespValue, RespValue] => [
          randomValue(next, depth + 1, resp3),
          randomValue(next, depth + 1, resp3),
        ]),
      );
      break;
    case 'set':
      v = resp.set(items());
      break;
    default:
      v = resp.push(items());
  }
  if (resp3 && depth < 3 && next() < 0.08) {
    v.attributes = [[resp.simple(randomText(next)), randomValue(next, depth + 1, resp3)]];
  }
  return v;
}

const DOUBLE_TEXT = (d: number) =>
  Number.isNaN(d)
    ? 'nan'
    : d === Number.POSITIVE_INFINITY
      ? 'inf'
      : d === Number.NEGATIVE_INFINITY
        ? '-inf'
        : Object.is(d, -0)
          ? '-0'
          : String(d);

/** What a RESP3 peer decodes: only the RESP2 null shapes collapse into RESP3 null. */
function expected3(v: RespValue): RespValue {
  let out: RespValue;
  if ((v.type === 'bulk' || v.type === 'array') && v.value === null) out = resp.null();
  else if (v.type === 'array') out = resp.array(v.value!.map(expected3));
  else if (v.type === 'set' || v.type === 'push') out = { type: v.type, value: v.value.map(expected3) };
  else if (v.type === 'map') out = resp.map(v.value.map(([k, val]) => [expected3(k), expected3(val)]));
  else out = { ...v };
  if (v.attributes !== undefined)
    out.attributes = v.attributes.map(([k, val]) => [expected3(k), expected3(val)]);
  else delete out.attributes;
  return out;
}

/** What a RESP2 peer decodes, per Redis' downgrade rules (written independently of the encoder). */
function expected2(v: RespValue): RespValue {
  switch (v.type) {
    case 'null':
      return resp.bulk(null);
    case 'boolean':
      return resp.integer(v.value ? 1 : 0);
    case 'double':
      return resp.bulk(DOUBLE_TEXT(v.value));
    case 'bignum':
      return resp.bulk(v.value.toString());
    case 'verbatim':
      return resp.bulk(v.value);
    case 'blobError':
      return resp.error(Buffer.from(v.value.map((c) => (c === 13 || c === 10 ? 32 : c))).toString());
    case 'array':
      return resp.array(v.value === null ? null : v.value.map(expected2));
    case 'set':
    case 'push':
      return resp.array(v.value.map(expected2));
    case 'map':
      return resp.array(v.value.flatMap(([k, val]) => [expected2(k), expected2(val)]));
    case 'simple':
    case 'error':
    case 'integer':
      return { type: v.type, value: v.value } as RespValue;
    default:
      return resp.bulk(v.value);
  }
}

function mutate(buf: Buffer, next: () => number): Buffer {
  let b = Buffer.from(buf);
  const rounds = 1 + Math.floor(next() * 3);
  for (let r = 0; r < rounds; r++) {
    const at = Math.floor(next() * (b.length + 1));
    switch (Math.floor(next() * 6)) {
      case 0:
        if (at < b.length) b[at] = Math.floor(next() * 256);
        break;
      case 1:
        b = Buffer.concat([b.subarray(0, at), randomBytes(next, 4), b.subarray(at)]);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + Math.floor(next() * 4))]);
        break;
      case 3:
        b = b.subarray(0, at);
        break;
      case 4:
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.floor(next() * b.length)), b.subarray(at)]);
        break;
      default:
        if (at < b.length) b[at] = 0x30 + Math.floor(next() * 10);
    }
  }
  return b;
}

describe('fuzz (seeded, deterministic)', () => {
  it('random bytes: values or one typed error, never a throw, independent of chunking', () => {
    const next = rng(SEED);
    let errors = 0;
    for (let i = 0; i < 12_000; i++) {
      if (check(randomBytes(next, 48), randomOptions(next), next).error) errors++;
    }
    // Sanity: the generator exercises both outcomes.
    expect(errors).toBeGreaterThan(1000);
    expect(errors).toBeLessThan(12_000);
  });

  it('mutated valid encodings: values or one typed error, never a throw, independent of chunking', () => {
    const next = rng(SEED + 1);
    let errors = 0;
    for (let i = 0; i < 12_000; i++) {
      const protocol: RespProtocol = next() < 0.5 ? 2 : 3;
      const valid =
        next() < 0.3
          ? encodeCommand(Array.from({ length: 1 + Math.floor(next() * 3) }, () => randomBuffer(next)))
          : encode(randomValue(next, 0, protocol === 3), { protocol });
      if (check(mutate(valid, next), randomOptions(next), next).error) errors++;
    }
    // Sanity: the mutations yield both values and errors, so both paths of check() ran.
    expect(errors).toBeGreaterThan(100);
    expect(errors).toBeLessThan(12_000);
  });

  it('encode → decode round-trips random value trees in RESP3 and RESP2', () => {
    const next = rng(SEED + 2);
    for (let i = 0; i < 3_000; i++) {
      const v3 = randomValue(next, 0, true);
      const out3 = check(encode(v3, { protocol: 3 }), {}, next);
      expect(out3.error).toBeUndefined();
      expect(out3.values).toEqual([expected3(v3)]);

      const v2 = randomValue(next, 0, true);
      const out2 = check(encode(v2, { protocol: 2 }), {}, next);
      expect(out2.error).toBeUndefined();
      expect(out2.values).toEqual([expected2(v2)]);
    }
  });

  it('commands round-trip through a server-mode decoder', () => {
    const next = rng(SEED + 3);
    for (let i = 0; i < 2_000; i++) {
      const args = Array.from({ length: 1 + Math.floor(next() * 5) }, () => randomBuffer(next));
      const out = check(encodeCommand(args), { mode: 'server' }, next);
      expect(out.values).toEqual([resp.command(args)]);
    }
  });

  it('server-mode limits: counts and sizes near and over each limit, whole, split and byte by byte', () => {
    const next = rng(SEED + 5);
    const near = (n: number) => Math.max(0, n - 1 + Math.floor(next() * 3));
    const seen = new Set<string>();
    for (let i = 0; i < 3_000; i++) {
      const inline = next() < 0.25;
      const count = 1 + Math.floor(next() * (next() < 0.1 ? 40 : 6));
      const args = Array.from({ length: count }, () =>
        inline ? Buffer.from('abcdefgh'.slice(0, 1 + Math.floor(next() * 8))) : randomBuffer(next),
      );
      const wire = inline ? Buffer.from(`${args.join(' ')}\r\n`) : encodeCommand(args);
      const longest = Math.max(...args.map((a) => a.length));
      // Each limit just under, at or just over what this command needs, or unset.
      const limits: RespDecoderLimits = { mode: 'server' };
      if (next() < 0.5) limits.maxArrayLength = near(count);
      if (next() < 0.5) limits.maxCommandBytes = near(wire.length);
      if (next() < 0.4) limits.maxBulkLength = near(longest);
      if (inline && next() < 0.4) limits.maxInlineLength = near(wire.length - 1);
      const expected = expectedLimitError(args, inline, limits);
      const out = check(wire, limits, next);
      expect(decodeChunks(bytewise(wire), limits), JSON.stringify(limits)).toEqual(out);
      if (expected === undefined) {
        expect(out.error, `${wire.toString('latin1')} ${JSON.stringify(limits)}`).toBeUndefined();
        expect(out.values).toEqual([resp.command(args)]);
      } else {
        expect(out.error, `${wire.toString('latin1')} ${JSON.stringify(limits)}`).toEqual({
          code: RespErrorCode.LIMIT_EXCEEDED,
          message: `Protocol error: ${expected}`,
        });
        seen.add(expected);
      }
    }
    // Every limit was hit at least once.
    expect([...seen].sort()).toEqual([
      'command too large',
      'invalid bulk length',
      'invalid multibulk length',
      'too big inline request',
    ]);
  });

  it('doubles survive RESP3 bit-exactly', () => {
    const next = rng(SEED + 4);
    const view = new DataView(new ArrayBuffer(8));
    for (let i = 0; i < 5_000; i++) {
      view.setUint32(0, Math.floor(next() * 2 ** 32));
      view.setUint32(4, Math.floor(next() * 2 ** 32));
      const d = view.getFloat64(0);
      const out = check(encode(resp.double(d), { protocol: 3 }), {}, next);
      const got = out.values[0];
      expect(got?.type === 'double' && Object.is(got.value, d)).toBe(true);
      // RESP2 clients get text that parses back to the same double.
      const text = encode(resp.double(d), { protocol: 2 }).toString().split('\r\n')[1]!;
      expect(Object.is(text === 'nan' ? Number.NaN : Number(text.replace('inf', 'Infinity')), d)).toBe(true);
    }
  });
});

/**
 * What a server-mode decoder must answer for one command under these limits, worked out from
 * the rules rather than by running the decoder: headers in wire order, each checked before
 * the payload it announces; a growing line reports whichever limit it crosses first.
 */
function expectedLimitError(args: Buffer[], inline: boolean, limits: RespDecoderLimits): string | undefined {
  const maxArgs = limits.maxArrayLength ?? Number.POSITIVE_INFINITY;
  const maxCommand = limits.maxCommandBytes ?? Number.POSITIVE_INFINITY;
  const maxBulk = limits.maxBulkLength ?? Number.POSITIVE_INFINITY;
  const maxLine = limits.maxInlineLength ?? 64 * 1024;
  if (inline) {
    // The CR before the LF is part of an inline line until the line is split.
    const length = args.join(' ').length + 1;
    if (length > Math.min(maxLine, maxCommand))
      return maxCommand < maxLine ? 'command too large' : 'too big inline request';
    return args.length > maxArgs ? 'invalid multibulk length' : undefined;
  }
  const countDigits = String(args.length).length;
  if (countDigits > Math.min(maxLine, maxCommand - 1)) return 'command too large';
  if (args.length > maxArgs) return 'invalid multibulk length';
  let bytes = 1 + countDigits + 2;
  if (bytes > maxCommand) return 'command too large';
  for (const a of args) {
    const digits = String(a.length).length;
    if (digits > Math.min(maxLine, maxCommand - bytes - 1)) return 'command too large';
    if (a.length > maxBulk) return 'invalid bulk length';
    bytes += 1 + digits + 2 + a.length + 2;
    if (bytes > maxCommand) return 'command too large';
  }
  return undefined;
}
