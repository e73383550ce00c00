import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asCommand,
  decodeAll,
  encode,
  encodeCommand,
  errorReply,
  type RespMap,
  type RespProtocol,
  type RespValue,
  resp,
} from '../src/index.js';
import { RawConnection, type RedisServer, startRedis } from './redis-harness.js';
import { decodeChunks, randomSplit, rng } from './split-harness.js';

let redis: RedisServer;
const connections: RawConnection[] = [];

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  for (const c of connections) c.close();
  await redis?.stop();
});

async function connect(protocol: RespProtocol, rechunk?: () => number): Promise<RawConnection> {
  const c = await RawConnection.open(redis.port, rechunk);
  connections.push(c);
  if (protocol === 3) expect((await c.call('HELLO', '3')).type).toBe('map');
  c.takeRaw();
  return c;
}

const bulk = (s: string | Buffer) => resp.bulk(s);

function field(map: RespValue, key: string): RespValue | undefined {
  expect(map.type).toBe('map');
  return (map as RespMap).value.find(([k]) => k.type === 'bulk' && k.value?.toString() === key)?.[1];
}

describe('interop with a real redis-server over raw sockets', () => {
  it('RESP2: strings, binary values, nulls, integers, errors, hashes as flat arrays', async () => {
    const c = await connect(2);
    expect(await c.call('PING')).toEqual(resp.simple('PONG'));
    const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(await c.call('SET', 'bin2', binary)).toEqual(resp.simple('OK'));
    expect(await c.call('GET', 'bin2')).toEqual(bulk(binary));
    expect(await c.call('GET', 'missing2')).toEqual(resp.bulk(null));
    expect(await c.call('INCRBY', 'n2', '-5')).toEqual(resp.integer(-5));
    expect(await c.call('HSET', 'h2', 'f1', 'v1', 'f2', 'v2')).toEqual(resp.integer(2));
    expect(await c.call('HGETALL', 'h2')).toEqual(
      resp.array([bulk('f1'), bulk('v1'), bulk('f2'), bulk('v2')]),
    );
    expect(await c.call('ZADD', 'z2', '1.5', 'm')).toEqual(resp.integer(1));
    expect(await c.call('ZSCORE', 'z2', 'm')).toEqual(bulk('1.5'));
    expect(await c.call('EXPIRE', 'missing2', '10')).toEqual(resp.integer(0));
    expect(await c.call('BLPOP', 'nolist', '0.01')).toEqual(resp.array(null));
    const err = await c.call('NOSUCHCMD');
    expect(err.type === 'error' && err.value.startsWith('ERR unknown command')).toBe(true);
  });

  it('go-redis handshake: pipelined HELLO 3 and CLIENT SETINFO', async () => {
    const c = await connect(2);
    c.write(
      Buffer.concat([
        encodeCommand(['HELLO', '3']),
        encodeCommand(['CLIENT', 'SETINFO', 'LIB-NAME', 'go-redis(,go1.22)']),
        encodeCommand(['CLIENT', 'SETINFO', 'LIB-VER', '9.5.1']),
      ]),
    );
    const hello = await c.next();
    expect(field(hello, 'proto')).toEqual(resp.integer(3));
    expect(field(hello, 'server')).toEqual(bulk('redis'));
    // Redis 7.0 predates CLIENT SETINFO; go-redis ignores the error, and we must decode it cleanly.
    for (let i = 0; i < 2; i++) expect(['error', 'simple']).toContain((await c.next()).type);
  });

  it('RESP3: maps for HGETALL, _ for missing keys, doubles, sets', async () => {
    const c = await connect(3);
    const binary = Buffer.from('\r\n\x00\xff', 'latin1');
    expect(await c.call('SET', 'bin3', binary)).toEqual(resp.simple('OK'));
    expect(await c.call('GET', 'bin3')).toEqual(bulk(binary));
    expect(await c.call('GET', 'missing3')).toEqual(resp.null());
    expect(await c.call('HSET', 'h3', 'f1', 'v1', 'f2', 'v2')).toEqual(resp.integer(2));
    expect(await c.call('HGETALL', 'h3')).toEqual(
      resp.map([
        [bulk('f1'), bulk('v1')],
        [bulk('f2'), bulk('v2')],
      ]),
    );
    expect(await c.call('ZADD', 'z3', '1.5', 'm')).toEqual(resp.integer(1));
    expect(await c.call('ZSCORE', 'z3', 'm')).toEqual(resp.double(1.5));
    expect(await c.call('SADD', 's3', 'x')).toEqual(resp.integer(1));
    expect(await c.call('SMEMBERS', 's3')).toEqual(resp.set([bulk('x')]));
  });

  it('every DEBUG PROTOCOL reply re-encodes byte-exactly, and downgrades to exactly what RESP2 clients get', async () => {
    const c3 = await connect(3);
    const c2 = await connect(2);
    const types = [
      'string',
      'integer',
      'double',
      'bignum',
      'null',
      'array',
      'set',
      'map',
      'attrib',
      'true',
      'false',
    ];
    for (const t of [...types, 'verbatim']) {
      const v3 = await c3.call('DEBUG', 'PROTOCOL', t);
      const raw3 = c3.takeRaw();
      const v2 = await c2.call('DEBUG', 'PROTOCOL', t);
      const raw2 = c2.takeRaw();
      expect(encode(v3, { protocol: 3 }).toString('latin1'), t).toBe(raw3.toString('latin1'));
      expect(encode(v3, { protocol: 2 }).toString('latin1'), t).toBe(raw2.toString('latin1'));
      expect(decodeAll(raw2)).toEqual([v2]);
    }
    // The push type: an out-of-band push followed by the real reply.
    const push = await c3.call('DEBUG', 'PROTOCOL', 'push');
    const reply = await c3.next();
    expect(push.type).toBe('push');
    expect(reply.type).toBe('bulk');
    expect(Buffer.concat([encode(push, { protocol: 3 }), encode(reply, { protocol: 3 })])).toEqual(
      c3.takeRaw(),
    );
  });

  it('pub/sub: SUBSCRIBE/PSUBSCRIBE messages are pushes in RESP3 and arrays in RESP2', async () => {
    const channel = 'app|resources-tree|agent1_guestbook|1.8.3';
    const sub3 = await connect(3);
    const sub2 = await connect(2);
    const pub = await connect(2);
    expect(await sub3.call('SUBSCRIBE', channel)).toEqual(
      resp.push([bulk('subscribe'), bulk(channel), resp.integer(1)]),
    );
    expect(await sub2.call('SUBSCRIBE', channel)).toEqual(
      resp.array([bulk('subscribe'), bulk(channel), resp.integer(1)]),
    );
    expect(await sub3.call('PSUBSCRIBE', 'app|*')).toEqual(
      resp.push([bulk('psubscribe'), bulk('app|*'), resp.integer(2)]),
    );
    sub3.takeRaw();
    sub2.takeRaw();

    expect(await pub.call('PUBLISH', channel, '')).toEqual(resp.integer(3));
    const m3 = await sub3.next();
    const p3 = await sub3.next();
    const m2 = await sub2.next();
    expect(m3).toEqual(resp.push([bulk('message'), bulk(channel), bulk('')]));
    expect(p3).toEqual(resp.push([bulk('pmessage'), bulk('app|*'), bulk(channel), bulk('')]));
    expect(m2).toEqual(resp.array([bulk('message'), bulk(channel), bulk('')]));
    // A proxy re-encoding the RESP3 push for a RESP2 client writes exactly what Redis would.
    expect(encode(m3, { protocol: 2 })).toEqual(sub2.takeRaw());
    expect(Buffer.concat([encode(m3, { protocol: 3 }), encode(p3, { protocol: 3 })])).toEqual(sub3.takeRaw());

    // RESP3 lets a subscribed connection run ordinary commands between pushes.
    expect(await sub3.call('PING')).toEqual(resp.simple('PONG'));
  });

  for (const protocol of [2, 3] as const) {
    it(`RESP${protocol}: a pipeline of 1000 commands written and read in arbitrary pieces`, async () => {
      const next = rng(1000 + protocol);
      const c = await connect(protocol, rng(2000 + protocol));
      const commands: Buffer[] = [];
      const expected: RespValue[] = [];
      let counter = 0;
      let last = Buffer.alloc(0);
      for (let i = 0; i < 1000; i++) {
        switch (i % 4) {
          case 0: {
            last = Buffer.from(
              Array.from({ length: Math.floor(next() * 2000) }, () => Math.floor(next() * 256)),
            );
            commands.push(encodeCommand(['SET', `p${protocol}:${i}`, last]));
            expected.push(resp.simple('OK'));
            break;
          }
          case 1:
            commands.push(encodeCommand(['GET', `p${protocol}:${i - 1}`]));
            expected.push(bulk(last));
            break;
          case 2:
            commands.push(encodeCommand(['INCR', `counter${protocol}`]));
            expected.push(resp.integer(++counter));
            break;
          default:
            commands.push(encodeCommand(['GET', `nothing:${i}`]));
            expected.push(protocol === 3 ? resp.null() : resp.bulk(null));
        }
      }
      for (const piece of randomSplit(Buffer.concat(commands), next, 3000)) c.write(piece);
      const got: RespValue[] = [];
      for (let i = 0; i < expected.length; i++) got.push(await c.next());
      expect(got).toEqual(expected);
    });
  }

  it('server mode reports the same protocol errors, with the same messages, as Redis', async () => {
    const cases = [
      '*1\r\nx\r\n',
      '*2\r\n$3\r\nGET\r\n:1\r\n',
      '*abc\r\n',
      '*1\r\n$-5\r\n',
      '*1\r\n$x\r\n',
      '*1\r\n$99999999999\r\n',
      'SET "a\r\n',
      "SET 'a'b\r\n",
      'PING\r\nSET "a"b c\r\n',
      'a'.repeat(70_000),
      `*${'1'.repeat(70_000)}`,
      `*1\r\n$${'1'.repeat(70_000)}`,
    ];
    for (const input of cases) {
      const ours = decodeChunks([Buffer.from(input)], { mode: 'server' });
      expect(ours.error, input.slice(0, 40)).toBeDefined();
      const c = await RawConnection.open(redis.port);
      connections.push(c);
      c.write(input);
      const raw = await c.untilClosed();
      const replies = decodeAll(raw);
      // One reply per command decoded before the error, then the error itself.
      expect(replies).toHaveLength(ours.values.length + 1);
      expect(replies.at(-1), input.slice(0, 40)).toEqual(resp.error(`ERR ${ours.error!.message}`));
      expect(raw.subarray(raw.length - errorReply(`ERR ${ours.error!.message}`).length)).toEqual(
        errorReply(`ERR ${ours.error!.message}`),
      );
    }
  });

  it('inline commands split into the same arguments Redis sees', async () => {
    const c = await connect(2);
    const lines = [
      'ECHO hello',
      'echo "a\\x41"',
      'ECHO "tab\\there"',
      "ECHO 'it\\'s'",
      'ECHO a"b c"',
      'ECHO "\\xZZ"',
      'ECHO "a\\"b"',
      'ECHO ""',
      '   ECHO    spaced   ',
      'ECHO "\\n\\r\\a\\b\\q"',
      "ECHO 'a\\nb'",
      'ECHO \x0bv',
      'ECHO "\\xff\\x00"',
    ];
    for (const line of lines) {
      const [value] = decodeAll(Buffer.from(`${line}\r\n`, 'latin1'), { mode: 'server' });
      const command = asCommand(value!);
      expect(command?.name).toBe('echo');
      expect(command?.args).toHaveLength(1);
      c.write(Buffer.from(`${line}\r\n`, 'latin1'));
      expect(await c.next(), line).toEqual(bulk(command!.args[0]!));
    }
  });
});
