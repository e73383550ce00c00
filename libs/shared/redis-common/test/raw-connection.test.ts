import { encodeCommand, joinRaw } from '@pullplane/resp';
import {
  createTestPki,
  type RedisServerHandle,
  redisWireReplies,
  startRedisServer,
} from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawConnection, type RawReply } from '../src/index.js';

// RawConnection against a real redis-server (with a password, so every connection is set up).
let redis: RedisServerHandle;
const logger = pino({ level: 'silent' });
const BIG = Buffer.alloc(1024 * 1024, 'b');
const NESTED = "return {1, {2, 'a', {}}, {}, 'z'}";

beforeAll(async () => {
  redis = await startRedisServer({ password: 'pw' });
}, 30_000);

afterAll(async () => {
  await redis?.stop();
});

const endpoint = () => ({ host: redis.host, port: redis.port, password: 'pw' });

function call(c: RawConnection, args: Array<string | Buffer>): Promise<RawReply | string> {
  return new Promise((resolve) => c.send(encodeCommand(args), resolve));
}

async function raw(c: RawConnection, args: Array<string | Buffer>): Promise<Buffer> {
  const reply = await call(c, args);
  if (typeof reply === 'string') throw new Error(reply);
  return joinRaw(reply.raw);
}

describe('RawConnection', () => {
  it.each([2, 3] as const)('hands over the bytes redis-server sent, in RESP%i', async (protocol) => {
    const c = new RawConnection({ endpoint: endpoint(), protocol, logger });
    try {
      await raw(c, ['SET', 'big', BIG]);
      await raw(c, ['HSET', 'h', 'f', 'v']);
      await raw(c, ['ZADD', 'z', '1.5', 'm']);
      const commands: Array<Array<string | Buffer>> = [
        ['GET', 'big'],
        ['EVAL', NESTED, '0'],
        ['HGETALL', 'h'],
        ['GET', 'missing'],
        ['MGET', 'big', 'missing'],
        ['ZSCORE', 'z', 'm'],
        ['SET', 'k', 'v'],
        ['HGET', 'h'],
      ];
      const expected = await redisWireReplies(
        { host: redis.host, port: redis.port, password: 'pw' },
        protocol,
        commands,
      );
      const got = await Promise.all(commands.map((args) => raw(c, args)));
      expect(got.map((b) => b.length)).toEqual(expected.map((b) => b.length));
      for (let i = 0; i < got.length; i++) expect(got[i]!.equals(expected[i]!)).toBe(true);
      expect(got[0]!.equals(Buffer.concat([Buffer.from('$1048576\r\n'), BIG, Buffer.from('\r\n')]))).toBe(
        true,
      );
      expect(got[1]!.toString()).toBe('*4\r\n:1\r\n*3\r\n:2\r\n$1\r\na\r\n*0\r\n*0\r\n$1\r\nz\r\n');
      expect(got[2]!.toString()).toBe(
        protocol === 2 ? '*2\r\n$1\r\nf\r\n$1\r\nv\r\n' : '%1\r\n$1\r\nf\r\n$1\r\nv\r\n',
      );
      expect(got[3]!.toString()).toBe(protocol === 2 ? '$-1\r\n' : '_\r\n');
      expect(got[5]!.toString()).toBe(protocol === 2 ? '$3\r\n1.5\r\n' : ',1.5\r\n');
      expect(got[6]!.toString()).toBe('+OK\r\n');
      expect(got[7]!.toString()).toMatch(/^-ERR wrong number of arguments/);
    } finally {
      c.close();
    }
  });

  it('passes no RESP3 push off as a reply', async () => {
    const c = new RawConnection({ endpoint: endpoint(), protocol: 3, logger });
    const other = new RawConnection({ endpoint: endpoint(), protocol: 2, logger });
    try {
      expect((await raw(c, ['CLIENT', 'TRACKING', 'on'])).toString()).toBe('+OK\r\n');
      await raw(c, ['GET', 'tracked']);
      // Redis writes the invalidation push to `c` while running this SET: before PING's reply.
      await raw(other, ['SET', 'tracked', '1']);
      expect((await raw(c, ['PING'])).toString()).toBe('+PONG\r\n');
      expect((await raw(c, ['GET', 'tracked'])).toString()).toBe('$1\r\n1\r\n');
    } finally {
      c.close();
      other.close();
    }
  });

  it('answers commands waiting when Redis goes away with the reason, and connects again for later ones', async () => {
    const own = await startRedisServer({});
    const c = new RawConnection({ endpoint: { host: own.host, port: own.port }, protocol: 3, logger });
    try {
      expect((await raw(c, ['SET', 'k', 'v'])).toString()).toBe('+OK\r\n');
      // Blocked until Redis dies; the ones behind it wait on the same connection.
      const waiting = [call(c, ['BLPOP', 'never', '0']), call(c, ['GET', 'k']), call(c, ['PING'])];
      await own.kill('SIGKILL');
      const failures = await Promise.all(waiting);
      expect(failures).toEqual([expect.any(String), expect.any(String), expect.any(String)]);
      // Nobody listens now: the next command fails fast, it does not wait out a timeout.
      expect(await call(c, ['PING'])).toMatch(/ECONNREFUSED/);
      await own.restart();
      expect((await raw(c, ['PING'])).toString()).toBe('+PONG\r\n');
      expect((await raw(c, ['GET', 'k'])).toString()).toBe('_\r\n');
    } finally {
      c.close();
      await own.stop();
    }
  });

  it('fails a command not answered in time, with those behind it, and serves later ones on a new connection', async () => {
    const c = new RawConnection({ endpoint: endpoint(), protocol: 2, timeoutMs: 300, logger });
    const admin = new RawConnection({ endpoint: endpoint(), protocol: 2, logger });
    try {
      const waiting = [call(c, ['BLPOP', 'never', '0']), call(c, ['PING'])];
      expect(await Promise.all(waiting)).toEqual([
        'command timed out after 300 ms',
        'command timed out after 300 ms',
      ]);
      expect((await raw(c, ['PING'])).toString()).toBe('+PONG\r\n');
      // The blocked connection was closed, not left behind on the server.
      await expect
        .poll(async () => (await raw(admin, ['CLIENT', 'LIST'])).toString().match(/cmd=blpop/g) ?? [])
        .toHaveLength(0);
    } finally {
      c.close();
      admin.close();
    }
  });

  it('talks TLS to a TLS-only Redis, verified with its CA, password and HELLO 3 included', async () => {
    const pki = await createTestPki();
    const cert = await pki.serverCert(['localhost', '127.0.0.1']);
    const own = await startRedisServer({
      password: 'tls-pw',
      tls: { cert: cert.certPem, key: cert.keyPem, ca: pki.ca.certPem },
    });
    const c = new RawConnection({
      endpoint: {
        host: own.host,
        port: own.port,
        password: 'tls-pw',
        tls: { ca: pki.ca.certPem, servername: 'localhost' },
      },
      protocol: 3,
      logger,
    });
    try {
      expect((await raw(c, ['GET', 'none'])).toString()).toBe('_\r\n');
    } finally {
      c.close();
      await own.stop();
    }
  });

  it('answers whatever is waiting, and anything sent later, once closed', async () => {
    const c = new RawConnection({ endpoint: endpoint(), protocol: 2, logger });
    const waiting = call(c, ['BLPOP', 'never', '0']);
    c.close();
    expect(await waiting).toBe('connection closed');
    expect(await call(c, ['PING'])).toBe('connection closed');
  });
});
