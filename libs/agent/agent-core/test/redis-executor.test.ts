import { decodeAll, type RespValue } from '@pullplane/resp';
import { type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import { createMemoryLink, type LogicalStream, Multiplexer, memoryTunnel } from '@pullplane/tunnel';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisExecutor } from '../src/index.js';

// The executor behind a real tunnel multiplexer pair (in memory) and a real redis-server.
let redis: RedisServerHandle;
let direct: Redis;
let executor: RedisExecutor;
let gateway: Multiplexer;
let agentSide: Multiplexer;

beforeAll(async () => {
  redis = await startRedisServer({ password: 'pw' });
  direct = new Redis({ host: redis.host, port: redis.port, password: 'pw' });
  executor = new RedisExecutor({
    agentName: 'east',
    endpoint: { host: redis.host, port: redis.port, password: 'pw' },
    logger: pino({ level: 'silent' }),
    poolSize: 2,
  });
  ({ requester: gateway, agent: agentSide } = memoryTunnel((s) => executor.handle(s)));
}, 30_000);

afterAll(async () => {
  direct?.disconnect();
  await executor?.stop();
  await redis?.stop();
});

const open = (args: Array<string | Buffer>, respVersion = 2): LogicalStream =>
  gateway.open({ head: { case: 'redis', value: { args: args.map((a) => Buffer.from(a)), respVersion } } });

async function run(args: Array<string | Buffer>, respVersion = 2): Promise<string> {
  const s = open(args, respVersion);
  expect((await s.responseHead()).status).toBe(200);
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  await new Promise((r) => s.on('end', r));
  return Buffer.concat(chunks).toString('latin1');
}

describe('RedisExecutor', () => {
  it('runs the agent-key commands with <agent>_ cut out, answering in the asked protocol', async () => {
    expect(await run(['SET', 'app|managed-resources|east_gb|1.gz', 'v', 'PX', '60000'])).toBe('+OK\r\n');
    expect(await direct.get('app|managed-resources|gb|1.gz')).toBe('v');
    expect(await run(['GET', 'app|managed-resources|east_gb|1.gz'])).toBe('$1\r\nv\r\n');
    expect(await run(['GET', 'app|managed-resources|east_none|1.gz'])).toBe('$-1\r\n');
    expect(await run(['GET', 'app|managed-resources|east_none|1.gz'], 3)).toBe('_\r\n');
    expect(await run(['SET', 'app|managed-resources|east_gb|1.gz', 'w', 'GET'])).toBe('$1\r\nv\r\n');
    expect(await run(['SET', 'app|managed-resources|east_gb|1.gz', 'x', 'NX'])).toBe('$-1\r\n');
    expect(await run(['MGET', 'app|managed-resources|east_gb|1.gz', 'app|resources-tree|east_no|1'], 3)).toBe(
      '*2\r\n$1\r\nw\r\n_\r\n',
    );
    // SET without KEEPTTL dropped the expiry.
    expect(await run(['PTTL', 'app|managed-resources|east_gb|1.gz'])).toBe(':-1\r\n');
    expect(
      await run(['EXISTS', 'app|managed-resources|east_gb|1.gz', 'app|managed-resources|east_gb|1.gz']),
    ).toBe(':2\r\n');
    expect(await run(['DEL', 'app|managed-resources|east_gb|1.gz'])).toBe(':1\r\n');
    expect(await run(['GET', 'app|managed-resources|east_gb|1.gz', 'extra'])).toMatch(
      /^-ERR wrong number of arguments/,
    );
  });

  it('refuses keys of other agents, shapeless keys and other commands', async () => {
    expect(await run(['GET', 'app|managed-resources|west_gb|1.gz'])).toMatch(
      /^-ERR agent east refused the key: it belongs to agent west/,
    );
    expect(await run(['GET', 'plain'])).toMatch(/^-ERR agent east refused the key/);
    expect(await run(['DEL', 'app|managed-resources|east_a|1', 'app|managed-resources|west_a|1'])).toMatch(
      /refused/,
    );
    expect(await run(['FLUSHALL'])).toMatch(/^-ERR unsupported command for agent key/);
    expect(await run(['KEYS', '*'])).toMatch(/^-ERR unsupported command for agent key/);
    expect(await direct.keys('*')).toEqual([]);
  });

  it('streams messages of a subscription and releases it when the stream ends', async () => {
    const s = open(['SUBSCRIBE', 'app|resources-tree|east_gb|1.8.3'], 3);
    expect((await s.responseHead()).status).toBe(200);
    const values: RespValue[] = [];
    s.on('data', (c: Buffer) => values.push(...decodeAll(c)));
    const p = open(['PSUBSCRIBE', 'app|resources-tree|east_*'], 2);
    expect((await p.responseHead()).status).toBe(200);
    const pv: RespValue[] = [];
    p.on('data', (c: Buffer) => pv.push(...decodeAll(c)));
    expect(await direct.publish('app|resources-tree|gb|1.8.3', '')).toBe(2);
    await expect.poll(() => values.length + pv.length).toBe(2);
    expect(values[0]).toMatchObject({ type: 'push' });
    expect(pv[0]).toMatchObject({ type: 'array' });
    s.destroy();
    p.destroy();
    await expect
      .poll(async () =>
        Number(((await direct.pubsub('NUMSUB', 'app|resources-tree|gb|1.8.3')) as unknown[])[1]),
      )
      .toBe(0);
    await expect.poll(async () => Number(await direct.pubsub('NUMPAT'))).toBe(0);
    expect(agentSide.activeStreams).toBe(0);
  });

  it('refuses a subscription to another agent’s channel', async () => {
    const s = open(['SUBSCRIBE', 'app|resources-tree|west_gb|1.8.3']);
    await expect(s.responseHead()).rejects.toThrow(/belongs to agent west/);
  });
});

describe('RedisExecutor push cap', () => {
  it('drops a subscription whose reader stopped once its unsent pushes pass the cap, and releases it', async () => {
    const slow = new RedisExecutor({
      agentName: 'east',
      endpoint: { host: redis.host, port: redis.port, password: 'pw' },
      logger: pino({ level: 'silent' }),
      maxPendingPushBytes: 32 * 1024,
    });
    // 16 KiB of tunnel credit: past it, pushes wait in the stream, counted against the cap.
    const link = createMemoryLink();
    const requester = new Multiplexer({
      sink: link.a,
      idParity: 'odd',
      maxChunkSize: 16 * 1024,
      initialWindow: 16 * 1024,
    });
    const agent = new Multiplexer({
      sink: link.b,
      idParity: 'even',
      maxChunkSize: 16 * 1024,
      initialWindow: 16 * 1024,
      onStream: (st) => slow.handle(st),
    });
    link.connect(
      (f) => requester.receive(f),
      (f) => agent.receive(f),
    );
    try {
      const s = requester.open({
        head: {
          case: 'redis',
          value: {
            args: [Buffer.from('SUBSCRIBE'), Buffer.from('app|resources-tree|east_slow|1')],
            respVersion: 3,
          },
        },
      });
      expect((await s.responseHead()).status).toBe(200);
      s.pause();
      const failed = new Promise<Error>((resolve) => s.on('error', resolve));
      const payload = 'p'.repeat(4 * 1024);
      // Published until the executor gives up on the reader (a bound, not a wait: 64 × 4 KiB is
      // twice credit and cap together many times over).
      for (let i = 0; i < 64 && !s.destroyed; i++) await direct.publish('app|resources-tree|slow|1', payload);
      expect((await failed).message).toMatch(/subscriber too slow/);
      await expect
        .poll(async () =>
          Number(((await direct.pubsub('NUMSUB', 'app|resources-tree|slow|1')) as unknown[])[1]),
        )
        .toBe(0);
      expect(agent.activeStreams).toBe(0);
    } finally {
      await slow.stop();
    }
  });
});

describe('RedisExecutor without a password', () => {
  it("answers a Redis that wants a password with NOAUTH and the agent's reason, logged once; subscriptions say so too", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'warn' },
      {
        write: (l: string) => {
          lines.push(JSON.parse(l) as Record<string, unknown>);
        },
      },
    );
    // The bundles' REDIS_PASSWORD is optional: an agent on a cluster without the Secret has none.
    const bare = new RedisExecutor({
      agentName: 'east',
      endpoint: { host: redis.host, port: redis.port },
      logger,
      poolSize: 1,
      // How long a subscription waits for Redis to confirm it before the stream is reset.
      commandTimeoutMs: 1_000,
    });
    const link = createMemoryLink();
    const requester = new Multiplexer({ sink: link.a, idParity: 'odd' });
    const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream: (st) => bare.handle(st) });
    link.connect(
      (f) => requester.receive(f),
      (f) => agent.receive(f),
    );
    const get = async () => {
      const s = requester.open({
        head: {
          case: 'redis',
          value: {
            args: [Buffer.from('GET'), Buffer.from('app|managed-resources|east_gb|1.gz')],
            respVersion: 2,
          },
        },
      });
      expect((await s.responseHead()).status).toBe(200);
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      await new Promise((r) => s.on('end', r));
      return Buffer.concat(chunks).toString('latin1');
    };
    try {
      const reason =
        'the agent east has no password for its local redis (--redis-password, REDIS_PASSWORD: Secret argocd-redis, key auth)';
      expect(await get()).toBe(`-NOAUTH Authentication required: ${reason}\r\n`);
      expect(await get()).toBe(`-NOAUTH Authentication required: ${reason}\r\n`);
      expect(lines.filter((l) => String(l.msg).includes('has no password'))).toEqual([
        expect.objectContaining({ msg: `the local redis requires a password and ${reason}` }),
      ]);
      const sub = requester.open({
        head: {
          case: 'redis',
          value: {
            args: [Buffer.from('SUBSCRIBE'), Buffer.from('app|resources-tree|east_gb|1')],
            respVersion: 3,
          },
        },
      });
      await expect(sub.responseHead()).rejects.toThrow(
        `the local redis refused the subscription: NOAUTH Authentication required: ${reason}`,
      );
    } finally {
      await bare.stop();
    }
  });
});
