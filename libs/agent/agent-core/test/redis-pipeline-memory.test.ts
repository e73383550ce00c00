import { decodeAll, encodeCommand } from '@pullplane/resp';
import { type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import { type LogicalStream, type Multiplexer, memoryTunnel } from '@pullplane/tunnel';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RedisExecutor } from '../src/index.js';

// A pipeline whose replies nobody reads: the executor behind a real tunnel multiplexer pair
// (in memory) and a real redis-server, with one local connection so commands run in order.
const VALUE = Buffer.alloc(64 * 1024, 'v');
const COMMANDS = 400;
const MAX_INFLIGHT = 8;
const MAX_REPLY_BYTES = 256 * 1024;

let redis: RedisServerHandle;
let executor: RedisExecutor;
let gateway: Multiplexer;

beforeAll(async () => {
  redis = await startRedisServer({});
  const direct = new Redis({ host: redis.host, port: redis.port });
  await direct.set('app|managed-resources|big|1.gz', VALUE);
  direct.disconnect();
  executor = new RedisExecutor({
    agentName: 'east',
    endpoint: { host: redis.host, port: redis.port },
    logger: pino({ level: 'silent' }),
    poolSize: 1,
    maxPipelineInflight: MAX_INFLIGHT,
    maxPipelineReplyBytes: MAX_REPLY_BYTES,
  });
  gateway = memoryTunnel((s) => executor.handle(s)).requester;
}, 30_000);

afterAll(async () => {
  await executor?.stop();
  await redis?.stop();
});

const get = encodeCommand(['GET', 'app|managed-resources|east_big|1.gz']);

function pipeline(): LogicalStream {
  return gateway.open({
    head: { case: 'redis', value: { args: [], respVersion: 2, pipeline: true } },
    hasBody: true,
  });
}

it('holds a bounded amount of replies for a reader that does not read, and loses none', async () => {
  const s = pipeline();
  expect((await s.responseHead()).status).toBe(200);
  s.pause();
  await new Promise<void>((resolve, reject) =>
    s.end(Buffer.concat(Array.from({ length: COMMANDS }, () => get)), (err?: Error | null) =>
      err ? reject(err) : resolve(),
    ),
  );
  // The same single local connection answers this after every command the pipeline had
  // already started: had the executor started all of them, all their replies are held now.
  const marker = gateway.open({
    head: {
      case: 'redis',
      value: { args: [Buffer.from('GET'), Buffer.from('app|managed-resources|east_none|1')] },
    },
  });
  marker.resume();
  await new Promise((r) => marker.on('end', r));
  // Another pipeline on the same local connection is served while the first one's reader sleeps.
  const other = pipeline();
  const otherReplies: Buffer[] = [];
  other.on('data', (c: Buffer) => otherReplies.push(c));
  other.end(encodeCommand(['GET', 'app|managed-resources|east_none|2']));
  await new Promise((r) => other.on('end', r));
  expect(Buffer.concat(otherReplies).toString()).toBe('$-1\r\n');
  const stalled = executor.pipelineStats();
  expect(stalled.replyBytes).toBeGreaterThan(0);
  // Limit plus what the commands already running may add.
  const bound = MAX_REPLY_BYTES + MAX_INFLIGHT * (VALUE.length + 16);
  expect(stalled.peakReplyBytes).toBeLessThanOrEqual(bound);

  const received: Buffer[] = [];
  s.on('data', (c: Buffer) => received.push(c));
  s.resume();
  await new Promise((r) => s.on('end', r));
  const replies = decodeAll(Buffer.concat(received));
  expect(replies).toHaveLength(COMMANDS);
  expect(replies.every((v) => v.type === 'bulk' && Buffer.compare(v.value as Buffer, VALUE) === 0)).toBe(
    true,
  );
  expect(executor.pipelineStats().peakReplyBytes).toBeLessThanOrEqual(bound);
  expect(executor.pipelineStats().replyBytes).toBe(0);
});
