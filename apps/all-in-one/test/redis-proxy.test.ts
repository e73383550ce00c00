import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '@pullplane/config';
import { type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AllInOneApp, createAllInOneApp } from '../src/app.js';
import { allInOneOptions } from '../src/options.js';

const run = promisify(execFile);
let app: AllInOneApp;
let dir: string;
let redis: RedisServerHandle;

const configFor = (extra: string[]) =>
  loadConfig(allInOneOptions, {
    argv: [
      '--gateway-port=0',
      '--resource-proxy-port=0',
      '--redis-proxy-port=0',
      '--ops-port=0',
      '--agents=1',
      `--state-dir=${dir}`,
      ...extra,
    ],
    env: {},
  }).config;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'all-in-one-redis-'));
  redis = await startRedisServer();
  app = await createAllInOneApp(configFor([`--redis-server-address=127.0.0.1:${redis.port}`]), {
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
  });
  await app.start();
}, 60_000);

afterAll(async () => {
  await app?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('has no redis proxy unless a Redis is given', async () => {
  const plain = await createAllInOneApp(configFor([]), {
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
  });
  expect(plain.redisProxy).toBeUndefined();
  expect(plain.nextSteps()).not.toContain('redis-cli');
});

it("serves the demo agent's keys through the redis proxy, and says how", async () => {
  const port = app.redisProxy!.proxy!.port;
  expect(app.nextSteps()).toContain(`redis-cli -h 127.0.0.1 -p ${port}`);
  const cli = async (...args: string[]) =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])).stdout.trim();
  expect(await cli('SET', 'app|managed-resources|demo-1_guestbook|1.8.3.gz', 'hello')).toBe('OK');
  expect(await cli('GET', 'app|managed-resources|demo-1_guestbook|1.8.3.gz')).toBe('hello');
  // demo-1 stored it under its own key: the cut happened on the agent.
  const direct = new Redis({ host: '127.0.0.1', port: redis.port });
  expect(await direct.get('app|managed-resources|guestbook|1.8.3.gz')).toBe('hello');
  direct.disconnect();
  expect(await cli('GET', 'app|managed-resources|demo-9_guestbook|1.8.3.gz')).toBe(
    'ERR agent demo-9 is not connected',
  );
});
