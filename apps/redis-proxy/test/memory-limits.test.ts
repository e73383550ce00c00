import { encodeCommand } from '@pullplane/resp';
import {
  type NatsServerHandle,
  type RedisServerHandle,
  startNatsServer,
  startRedisServer,
  waitFor,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProxyProcess, rawConnection, spawnProxy, unreadByProxy } from './proxy-process.js';

// The attacks of the issue that found these holes, against the built proxy in its own process
// (so /proc shows its memory alone), a real principal redis-server with a password, real NATS.
const PASSWORD = 'argocd-redis-pw';
const MiB = 1024 * 1024;
/** Budget of this proxy: small, so the slow-loris test fills it with a few connections. */
const BUDGET = 64 * MiB;

let nats: NatsServerHandle;
let principal: RedisServerHandle;
let proxy: ProxyProcess;
const clients: Redis[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  principal = await startRedisServer({ password: PASSWORD });
  proxy = await spawnProxy(
    [
      `--redis-server-address=127.0.0.1:${principal.port}`,
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      `--max-buffered-bytes=${BUDGET}`,
      `--max-bulk-length=${16 * MiB}`,
      `--max-command-bytes=${17 * MiB}`,
    ],
    { REDIS_PASSWORD: PASSWORD },
  );
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await proxy?.stop();
  await Promise.all([nats?.stop(), principal?.stop()]);
});

function client(): Redis {
  const c = new Redis({ host: '127.0.0.1', port: proxy.port, password: PASSWORD, maxRetriesPerRequest: 0 });
  clients.push(c);
  return c;
}

/**
 * An authenticated client doing SET/GET round trips until `stop` resolves; every one must
 * succeed. Returns how many completed while `during` was pending.
 */
async function serveThroughout(
  c: Redis,
  during: Promise<unknown>,
): Promise<{ total: number; during: number }> {
  let done = false;
  let total = 0;
  let inside = 0;
  void during.finally(() => {
    done = true;
  });
  for (let i = 0; !done; i++) {
    const value = `v${i}`;
    expect(await c.set(`served-${i % 16}`, value)).toBe('OK');
    expect(await c.get(`served-${i % 16}`)).toBe(value);
    total++;
    if (!done) inside++;
  }
  return { total, during: inside };
}

describe('before AUTH', () => {
  it('refuses 50 connections each sending a 1M-argument command at its header: PING still answered, ' +
    'peak RSS grows by less than 48 MiB, authenticated clients served throughout', async () => {
    const c = client();
    for (let i = 0; i < 50; i++) await c.set(`warm-${i}`, 'x');
    // 1,048,575 one-byte arguments after the count: ~7 MiB on the wire, one buffer for all.
    const header = Buffer.from('*1048576\r\n$4\r\nPING\r\n');
    const body = Buffer.from('$1\r\na\r\n'.repeat(1_048_575));
    const before = proxy.memory().rss;
    proxy.resetPeak();
    const attack = (async () => {
      const conns = await Promise.all(Array.from({ length: 50 }, () => rawConnection(proxy.port)));
      for (const conn of conns) {
        conn.socket.write(header);
        conn.socket.write(body);
      }
      await Promise.all(conns.map((conn) => conn.closed));
      return conns.map((conn) => conn.received());
    })();
    const [served, answers] = await Promise.all([serveThroughout(c, attack), attack]);
    // Each was told why, then closed, before its arguments were read.
    for (const answer of answers) {
      expect(answer).toBe(
        '-ERR Protocol error: unauthenticated multibulk length (at most 10 arguments before AUTH, --max-unauthenticated-args)\r\n',
      );
    }
    expect(served.during).toBeGreaterThan(0);
    expect(
      await proxy.metric('pullplane_redis_proxy_connections_refused_total', {
        limit: 'unauthenticated_args',
      }),
    ).toBe(50);
    const ping = await rawConnection(proxy.port);
    ping.socket.write('PING\r\n');
    await ping.receivedText('+PONG\r\n');
    ping.socket.destroy();
    const { peak } = proxy.memory();
    expect(peak - before).toBeLessThan(48 * MiB);
  }, 60_000);

  it('refuses 200 connections announcing a 64 MiB value at the header, before any of it is kept', async () => {
    const conns = await Promise.all(Array.from({ length: 200 }, () => rawConnection(proxy.port)));
    const head = Buffer.from(`*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$${64 * MiB}\r\n`);
    const part = Buffer.alloc(64 * 1024, 0x61);
    for (const conn of conns) conn.socket.write(Buffer.concat([head, part]));
    await Promise.all(conns.map((conn) => conn.closed));
    for (const conn of conns)
      expect(conn.received()).toMatch(
        /^-ERR Protocol error: unauthenticated bulk length \(at most 16384 bytes/,
      );
  }, 30_000);
});

describe('after AUTH', () => {
  it('200 slow connections each holding 7 MiB of an 8 MiB value: those that fit the budget are kept, ' +
    'the rest get the budget error, peak RSS grows by less than the budget + 32 MiB, other clients are served', async () => {
    const value = 8 * MiB;
    const held = 7 * MiB;
    const head = Buffer.concat([
      encodeCommand(['AUTH', PASSWORD]),
      Buffer.from(`*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$${value}\r\n`),
    ]);
    const part = Buffer.alloc(held, 0x62);
    const c = client();
    await c.ping();
    const direct = new Redis({ host: '127.0.0.1', port: principal.port, password: PASSWORD });
    clients.push(direct);
    const before = proxy.memory().rss;
    proxy.resetPeak();
    const conns = await Promise.all(Array.from({ length: 200 }, () => rawConnection(proxy.port)));
    for (const conn of conns) {
      conn.socket.write(head);
      conn.socket.write(part);
    }
    // The proxy decides at each header: admitted commands are charged their whole announced
    // size at once, the others are refused. Wait until it has decided for all 200.
    const refusals = () =>
      proxy.metric('pullplane_redis_proxy_connections_refused_total', { limit: 'buffer_budget' });
    const admitted = async () =>
      Math.floor((await proxy.metric('pullplane_redis_proxy_buffered_bytes', { side: 'request' })) / value);
    await waitFor(async () => (await refusals()) + (await admitted()) === 200, 20_000);
    const refusedCount = await refusals();
    const refusal = `+OK\r\n-ERR command refused: the proxy's buffers for all clients are full (${BUDGET} bytes, --max-buffered-bytes)\r\n`;
    await waitFor(
      async () => conns.filter((conn) => conn.received().includes('-ERR')).length === refusedCount,
      20_000,
    );
    const refused = conns.filter((conn) => conn.received().includes('-ERR'));
    const holding = conns.filter((conn) => !refused.includes(conn));
    await Promise.all(refused.map((conn) => conn.closed));
    for (const conn of refused) expect(conn.received()).toBe(refusal);
    for (const conn of holding) expect(conn.received()).toBe('+OK\r\n');
    // Those kept have handed over all 7 MiB and the proxy has read every byte of it.
    await Promise.all(
      holding.map(
        (conn) => new Promise<void>((resolve) => conn.socket.write(Buffer.alloc(0), () => resolve())),
      ),
    );
    await waitFor(
      async () => holding.every((conn) => unreadByProxy(proxy.port, conn.socket.localPort!) === 0),
      20_000,
    );
    // Memory while they hold: the budget's worth at most, plus the process' own churn.
    expect(proxy.memory().peak - before).toBeLessThan(BUDGET + 32 * MiB);
    // The budget holds a few 8 MiB commands (each also charged its headers), never all 200.
    expect(holding.length).toBeGreaterThan(0);
    expect(holding.length).toBeLessThanOrEqual(BUDGET / value);
    // Small commands arrive whole and need no budget: other clients are served meanwhile.
    expect(await c.set('meanwhile', '1')).toBe('OK');
    expect(await c.get('meanwhile')).toBe('1');
    // The connections that were kept finish their values, which reach the principal Redis.
    for (const conn of holding)
      conn.socket.write(Buffer.concat([Buffer.alloc(value - held, 0x62), Buffer.from('\r\n')]));
    await Promise.all(holding.map((conn) => conn.receivedText('+OK\r\n+OK\r\n')));
    expect(await direct.strlen('slow')).toBe(value);
    for (const conn of holding) conn.socket.destroy();
    await waitFor(
      async () => (await proxy.metric('pullplane_redis_proxy_buffered_bytes', { side: 'request' })) === 0,
      20_000,
    );
  }, 90_000);
});
