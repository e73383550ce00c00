import type { Gateway } from '@pullplane/gateway';
import type { RedisProxyService } from '@pullplane/redis-proxy';
import { type SlowHop, startSlowHop } from '@pullplane/testing';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentPath, metricValue, startAgentPath } from './agent-path.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }, pino.destination(2));

// A burst of large agent-side reads through a small relay share: real nats-server, a gateway
// holding agent-a's tunnel with an mTLS internal listener and a 7 MiB share per agent, one
// redis-proxy app reaching it over the network, real redis-servers for the principal and the
// agent. The gateway slows the burst to the share; no command is refused.
const SHARE = 7 * 1024 * 1024;
let agentPath: AgentPath;
let gateway: Gateway;
let gatewayRegistry: Registry;
let agentDirect: Redis;
let replicas: RedisProxyService[];
let slowHop: SlowHop;
const clients: Redis[] = [];

beforeAll(async () => {
  agentPath = await startAgentPath({
    logger,
    replicas: 1,
    requestTimeout: '30s',
    agentLimits: { relayShareBytes: SHARE },
  });
  ({ gateway, gatewayRegistry, agentDirect, replicas } = agentPath);
  // The proxy reaches the gateway through a hop slower than the agent's tunnel, as across a
  // network: the gateway's bytes go back at most 64 KiB every 2 ms, so what the agent sends waits
  // in the gateway.
  slowHop = await startSlowHop(`127.0.0.1:${gateway.internalPort}`, { everyMs: 2 });
  for (const r of replicas) {
    const table = (r.router as unknown as { table: { set(agent: string, record: unknown): void } }).table;
    table.set('agent-a', { ...r.router!.lookup('agent-a')!, internalAddress: slowHop.address });
  }
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  slowHop?.close();
  await agentPath?.stop();
});

const port = (i: number) => replicas[i]!.proxy!.port;
function client(i: number): Redis {
  const c = new Redis({
    host: '127.0.0.1',
    port: port(i),
    password: 'argocd-redis-pw',
    maxRetriesPerRequest: 0,
  });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

describe('a burst of large agent-key reads within a small relay share', () => {
  it('24 clients each reading a 1 MiB agent key at once through a 7 MiB share all get it, byte for byte', async () => {
    // Each stream holds a window each way (a Redis stream carries commands too): 24 × 2 × 256 KiB
    // is more than the share, so the relay passes on no credit beyond the windows while all are
    // open, and what waits in the gateway stays within the response windows (6 MiB).
    const n = 24;
    const values = Array.from({ length: n }, (_, i) => {
      const v = Buffer.alloc(1024 * 1024);
      for (let j = 0; j < v.length; j++) v[j] = (j * 13 + i * 101 + (j >> 12)) & 0xff;
      return v;
    });
    // On the agent's Redis under its own names; through the proxy with the agent in the name.
    await Promise.all(values.map((v, i) => agentDirect.set(`app|resources-tree|big${i}|1.8.3.gz`, v)));
    const readers = Array.from({ length: n }, () => client(0));
    await Promise.all(readers.map((c) => c.ping()));
    const got = await Promise.all(
      readers.map((c, i) => c.getBuffer(`app|resources-tree|agent-a_big${i}|1.8.3.gz`)),
    );
    for (const [i, v] of got.entries()) expect(v?.equals(values[i]!)).toBe(true);
    expect(await metricValue(gatewayRegistry, 'pullplane_gateway_relay_budget_resets_total')).toBe(0);
    const share = gateway.session('agent-a')!.relayBudget;
    expect(share.peakOutstanding).toBeLessThanOrEqual(SHARE);
  });
});
