import type { Gateway } from '@pullplane/gateway';
import type { RedisProxyService } from '@pullplane/redis-proxy';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentPath, metricValue, startAgentPath } from './agent-path.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// Large agent-key reads on client connections that stay open, through the gateway's default
// share per agent (16 MiB): real nats-server, a gateway with an mTLS internal listener, one
// redis-proxy app reaching it over the network, real redis-servers. Each client connection is
// one pipeline stream on the agent's tunnel for as long as it is open, holding its windows: 50 of
// them hold more than the share, so the relay passes on credit only within what each holds.
let agentPath: AgentPath;
let gateway: Gateway;
let gatewayRegistry: Registry;
let agentDirect: Redis;
let replicas: RedisProxyService[];
const clients: Redis[] = [];

beforeAll(async () => {
  agentPath = await startAgentPath({ logger, replicas: 1, requestTimeout: '20s' });
  ({ gateway, gatewayRegistry, agentDirect, replicas } = agentPath);
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await agentPath?.stop();
});

describe('large agent-key reads on connections that stay open', () => {
  it('50 clients reading a 1 MiB agent key five times each all get it every time', async () => {
    // No stream ends between the reads to free room in the share: each goes on from the room its
    // own written bytes leave. When that room waited for the next stream's end, some reads of
    // each round waited for the request timeout.
    const n = 50;
    const value = Buffer.alloc(1024 * 1024);
    for (let j = 0; j < value.length; j++) value[j] = (j * 7 + (j >> 10)) & 0xff;
    await agentDirect.set('app|resources-tree|shared|1.8.3.gz', value);
    const readers = Array.from({ length: n }, () => {
      const c = new Redis({
        host: '127.0.0.1',
        port: replicas[0]!.proxy!.port,
        password: 'argocd-redis-pw',
        maxRetriesPerRequest: 0,
      });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    });
    await Promise.all(readers.map((c) => c.ping()));
    for (let round = 0; round < 5; round++) {
      const got = await Promise.all(
        readers.map((c) => c.getBuffer('app|resources-tree|agent-a_shared|1.8.3.gz').catch((e: Error) => e)),
      );
      expect(got.map((v) => (Buffer.isBuffer(v) ? v.equals(value) : String(v)))).toEqual(
        Array.from({ length: n }, () => true),
      );
    }
    expect(await metricValue(gatewayRegistry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);
    expect(gateway.session('agent-a')!.relayBudget.peakOutstanding).toBeLessThanOrEqual(16 * 1024 * 1024);
  }, 180_000);
});
