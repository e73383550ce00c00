import type { Span, Tracer } from '@opentelemetry/api';
import { encodeCommand, joinRaw, ValueSlicer } from '@pullplane/resp';
import { type RedisServerHandle, redisWireReplies, startRedisServer } from '@pullplane/testing';
import { type LogicalStream, memoryTunnel } from '@pullplane/tunnel';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisExecutor, type RedisExecutorOptions } from '../src/index.js';

// The pipeline path: the executor behind a real tunnel multiplexer pair (in memory) and a
// real redis-server; replies must be the bytes the server sent, cut at value boundaries.
const BIG = Buffer.alloc(1024 * 1024, 'b');
const KEY = 'app|managed-resources|east_gb|1.gz';
const LOCAL = 'app|managed-resources|gb|1.gz';

let redis: RedisServerHandle;
let direct: Redis;

beforeAll(async () => {
  redis = await startRedisServer({ password: 'pw' });
  direct = new Redis({ host: redis.host, port: redis.port, password: 'pw' });
}, 30_000);

afterAll(async () => {
  direct?.disconnect();
  await redis?.stop();
});

interface Fixture {
  executor: RedisExecutor;
  pipeline(respVersion: 2 | 3): Pipeline;
  stop(): Promise<void>;
}

function fixture(server: RedisServerHandle, opts: Partial<RedisExecutorOptions> = {}): Fixture {
  const executor = new RedisExecutor({
    agentName: 'east',
    endpoint: {
      host: server.host,
      port: server.port,
      ...(server.password ? { password: server.password } : {}),
    },
    logger: pino({ level: 'silent' }),
    poolSize: 1,
    ...opts,
  });
  const gateway = memoryTunnel((s) => executor.handle(s)).requester;
  return {
    executor,
    pipeline: (respVersion) =>
      new Pipeline(
        gateway.open({
          head: { case: 'redis', value: { args: [], respVersion, pipeline: true } },
          hasBody: true,
        }),
      ),
    stop: () => executor.stop(),
  };
}

/** The proxy's end of a pipeline stream: each reply as the bytes that came for it. */
class Pipeline {
  private readonly replies: Buffer[] = [];
  private readonly wanted: Array<{ n: number; resolve: (r: Buffer[]) => void }> = [];

  constructor(readonly stream: LogicalStream) {
    const slicer = new ValueSlicer({
      onValue: (_v, raw) => {
        this.replies.push(joinRaw(raw));
        this.check();
      },
      onError: (err) => {
        throw err;
      },
    });
    stream.on('data', (c: Buffer) => slicer.push(c));
  }

  send(...commands: Array<Array<string | Buffer>>): void {
    this.stream.write(Buffer.concat(commands.map((c) => encodeCommand(c))));
  }

  /** The next `n` replies. */
  next(n: number): Promise<Buffer[]> {
    return new Promise((resolve) => {
      this.wanted.push({ n, resolve });
      this.check();
    });
  }

  private check(): void {
    const w = this.wanted[0];
    if (w === undefined || this.replies.length < w.n) return;
    this.wanted.shift();
    w.resolve(this.replies.splice(0, w.n));
  }
}

/** A tracer that records each span's name and how it ended. */
function recordingTracer(): { tracer: Tracer; spans: Array<{ name: string; error?: unknown }> } {
  const spans: Array<{ name: string; error?: unknown }> = [];
  const tracer = {
    startSpan: (name: string) => {
      const entry: { name: string; error?: unknown } = { name };
      const span = {
        setAttribute: (k: string, v: unknown) => {
          if (k === 'error.type') entry.error = v;
          return span;
        },
        setStatus: () => span,
        end: () => spans.push(entry),
      };
      return span as unknown as Span;
    },
  } as unknown as Tracer;
  return { tracer, spans };
}

describe('RedisExecutor pipelines', () => {
  it.each([2, 3] as const)(
    'answers in RESP%i with the bytes the local Redis sent, keys cut, refusals and unknown commands answered here',
    async (protocol) => {
      const commands: string[] = [];
      const { tracer, spans } = recordingTracer();
      const f = fixture(redis, { onCommand: (name, failed) => commands.push(`${name}:${failed}`), tracer });
      try {
        await direct.set(LOCAL, BIG);
        await direct.hset('h', 'f', 'v');
        const p = f.pipeline(protocol);
        p.send(
          ['GET', KEY],
          ['MGET', KEY, 'app|managed-resources|east_none|1'],
          ['GET', 'app|managed-resources|east_none|1'],
          ['GET', 'app|managed-resources|west_gb|1.gz'],
          ['HGETALL', 'app|x|east_h'],
          ['SET', 'app|x|east_s', 'v', 'GET'],
          ['SET', 'app|x|east_s', 'w'],
          ['EXPIRE', KEY, '600'],
          ['GET', KEY, 'extra'],
        );
        const replies = await p.next(9);
        const expected = await redisWireReplies(
          { host: redis.host, port: redis.port, password: 'pw' },
          protocol,
          [
            ['GET', LOCAL],
            ['MGET', LOCAL, 'app|managed-resources|none|1'],
            ['GET', 'app|managed-resources|none|1'],
          ],
        );
        for (let i = 0; i < 3; i++) expect(replies[i]!.equals(expected[i]!)).toBe(true);
        expect(
          replies[0]!.equals(Buffer.concat([Buffer.from('$1048576\r\n'), BIG, Buffer.from('\r\n')])),
        ).toBe(true);
        expect(replies[1]!.subarray(0, 4).toString()).toBe('*2\r\n');
        expect(replies[2]!.toString()).toBe(protocol === 2 ? '$-1\r\n' : '_\r\n');
        expect(replies[3]!.toString()).toBe('-ERR agent east refused the key: it belongs to agent west\r\n');
        expect(replies[4]!.toString()).toBe("-ERR unsupported command for agent key: 'hgetall'\r\n");
        expect(replies.slice(5, 8).map(String)).toEqual([
          protocol === 2 ? '$-1\r\n' : '_\r\n',
          '+OK\r\n',
          ':1\r\n',
        ]);
        expect(replies[8]!.toString()).toMatch(/^-ERR wrong number of arguments for 'get' command/);
        expect(await direct.get('app|x|s')).toBe('w');
        // Refusals are counted as they are refused, commands run as they are answered.
        expect(commands).toEqual([
          'get:true',
          'unknown:true',
          'get:false',
          'mget:false',
          'get:false',
          'set:false',
          'set:false',
          'expire:false',
          'get:false',
        ]);
        // Only commands run on the local Redis have a span; a Redis error reply marks its span.
        expect(spans).toEqual([
          { name: 'GET' },
          { name: 'MGET' },
          { name: 'GET' },
          { name: 'SET' },
          { name: 'SET' },
          { name: 'EXPIRE' },
          { name: 'GET', error: 'reply_error' },
        ]);
        p.stream.end();
        await new Promise((r) => p.stream.on('end', r));
        expect(f.executor.pipelineStats().replyBytes).toBe(0);
      } finally {
        await direct.del(LOCAL, 'h', 'app|x|s');
        await f.stop();
      }
    },
  );

  it('answers a long run of commands refused here in order, each at once (no recursion per command)', async () => {
    const f = fixture(redis);
    try {
      const p = f.pipeline(2);
      const n = 50_000;
      const refused = encodeCommand(['GET', 'app|managed-resources|west_gb|1.gz']);
      const unknown = encodeCommand(['KEYS', '*']);
      p.stream.write(Buffer.concat(Array.from({ length: n }, (_, i) => (i % 2 === 0 ? refused : unknown))));
      p.send(['GET', 'app|managed-resources|east_none|1']);
      const replies = await p.next(n + 1);
      expect(replies[0]!.toString()).toMatch(/^-ERR agent east refused the key/);
      expect(replies[1]!.toString()).toMatch(/^-ERR unsupported command for agent key/);
      expect(replies[n - 1]!.toString()).toMatch(/^-ERR unsupported command for agent key/);
      expect(replies[n]!.toString()).toBe('$-1\r\n');
    } finally {
      await f.stop();
    }
  });

  it('answers the commands waiting when the local Redis goes away, and runs later ones once it is back', async () => {
    const own = await startRedisServer({});
    const admin = new Redis({ host: own.host, port: own.port, maxRetriesPerRequest: 0, lazyConnect: true });
    admin.on('error', () => undefined);
    const commands: string[] = [];
    const f = fixture(own, { onCommand: (name, failed) => commands.push(`${name}:${failed}`) });
    try {
      await admin.connect();
      await admin.set('x|a', '1');
      // Writes wait at the server (reads run): the SET and the GET behind it are in flight.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const p = f.pipeline(3);
      p.send(['GET', 'x|east_a'], ['SET', 'x|east_b', '2'], ['GET', 'x|east_a']);
      // The first reply came: the other two were written with it and wait on the server.
      expect((await p.next(1)).map(String)).toEqual(['$1\r\n1\r\n']);
      await own.kill('SIGKILL');
      const failed = await p.next(2);
      for (const r of failed)
        expect(r.toString()).toMatch(/^-ERR agent east local redis unavailable: .+\r\n$/);
      expect(commands).toEqual(['get:false', 'set:true', 'get:true']);
      await own.restart();
      // The same pipeline goes on: a new connection, in the client's protocol.
      p.send(['SET', 'x|east_b', '3'], ['GET', 'x|east_b'], ['GET', 'x|east_none']);
      expect((await p.next(3)).map(String)).toEqual(['+OK\r\n', '$1\r\n3\r\n', '_\r\n']);
    } finally {
      admin.disconnect();
      await f.stop();
      await own.stop();
    }
  });

  it('answers a command the local Redis does not answer in time, and the pipeline goes on', async () => {
    const f = fixture(redis, { commandTimeoutMs: 300 });
    try {
      await direct.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const p = f.pipeline(2);
      p.send(['SET', 'x|east_t', '1'], ['GET', 'x|east_t']);
      expect((await p.next(2)).map(String)).toEqual([
        '-ERR agent east local redis unavailable: command timed out after 300 ms\r\n',
        '-ERR agent east local redis unavailable: command timed out after 300 ms\r\n',
      ]);
      await direct.call('CLIENT', 'UNPAUSE');
      p.send(['SET', 'x|east_t', '2'], ['GET', 'x|east_t']);
      expect((await p.next(2)).map(String)).toEqual(['+OK\r\n', '$1\r\n2\r\n']);
    } finally {
      await direct.call('CLIENT', 'UNPAUSE');
      await direct.del('x|t');
      await f.stop();
    }
  });
});
