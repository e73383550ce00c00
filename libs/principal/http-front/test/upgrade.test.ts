import net from 'node:net';
import { RawHttpConnection } from '@pullplane/testing';
import { type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFront, type HttpFront } from '../src/index.js';
import { type RouteLog, testRoute, tunnelPair } from './support.js';

// Upgrades through the front, and its drain: a route that forwards upgrades, over a real
// multiplexer pair whose agent end plays a backend that switches protocols (or declines).
let answer: (s: LogicalStream) => void = () => undefined;
const pair = tunnelPair((s) => answer(s));
const log: RouteLog = { reports: [], heads: 0 };
let front: HttpFront;

beforeAll(async () => {
  front = createHttpFront(testRoute(log, { upgrades: true }), {
    router: pair.router,
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    host: '127.0.0.1',
    port: 0,
    requestTimeoutMs: 2_000,
    maxRequestBodyBytes: 1024,
  });
  await front.listen();
});
afterAll(async () => {
  await front?.close(0);
  pair.close();
});

function upgradeRequest(): string {
  return 'GET /ws HTTP/1.1\r\nhost: front\r\nx-caller: alice\r\nconnection: Upgrade\r\nupgrade: echo\r\n\r\n';
}

async function connect(): Promise<net.Socket> {
  const socket = net.connect(front.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

describe('an upgrade the route forwards', () => {
  it('joins the connection to the stream after the agent’s 101, both ways, and reports it when it closes', async () => {
    answer = (s) => {
      s.respond(101, [
        { name: 'Upgrade', value: 'echo' },
        { name: 'Set-Cookie', value: 'planted=1' },
      ]);
      s.on('data', (d: Buffer) => s.write(Buffer.from(d.toString().toUpperCase())));
      s.on('end', () => s.end());
    };
    const before = log.reports.length;
    const socket = await connect();
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
    });
    socket.write(upgradeRequest());
    await new Promise<void>((resolve) => {
      const check = () => (got.includes('\r\n\r\n') ? resolve() : socket.once('data', check));
      check();
    });
    expect(got).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(got).toMatch(/\r\nUpgrade: echo\r\n/);
    expect(got).toMatch(/\r\nconnection: Upgrade\r\n/);
    expect(got).not.toMatch(/Set-Cookie/i);
    const open = pair.opened.at(-1)!;
    expect(open.head.case === 'http' && open.head.value.upgrade).toBe('echo');
    const headEnd = got.indexOf('\r\n\r\n') + 4;
    socket.write('hello');
    await new Promise<void>((resolve) => {
      const check = () => (got.slice(headEnd) === 'HELLO' ? resolve() : socket.once('data', check));
      check();
    });
    const closed = new Promise((r) => socket.once('close', r));
    socket.end();
    await closed;
    await expect.poll(() => log.reports.length).toBe(before + 1);
    expect(log.reports.at(-1)).toMatchObject({ status: 101, upgrade: 'echo', bytesIn: 5, bytesOut: 5 });
    expect(log.reports.at(-1)!.failure).toBeUndefined();
  });

  it("relays a declined upgrade's answer and closes the connection", async () => {
    answer = (s) => {
      s.respond(403, [{ name: 'Content-Type', value: 'text/plain' }]);
      s.end('no');
    };
    const c = new RawHttpConnection(await connect());
    c.send(upgradeRequest());
    const { unread } = await c.closed;
    expect(c.received.toString('latin1')).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(c.received.toString('latin1')).toMatch(/\r\nconnection: close\r\n\r\nno$/);
    expect(unread.length).toBeGreaterThan(0);
    expect(log.reports.at(-1)).toMatchObject({ status: 403, upgrade: 'echo' });
  });
});

describe('close', () => {
  it('gives open exchanges the grace, then cuts them', async () => {
    const drained = createHttpFront(testRoute(log), {
      router: pair.router,
      logger: pino({ level: 'silent' }),
      registry: new Registry(),
      host: '127.0.0.1',
      port: 0,
      requestTimeoutMs: 10_000,
      maxRequestBodyBytes: 1024,
    });
    await drained.listen();
    let stream: LogicalStream | undefined;
    const reset = new Promise<unknown>((resolve) => {
      answer = (s) => {
        stream = s;
        s.respond(200, [{ name: 'Content-Type', value: 'text/plain' }]);
        s.write('first');
        s.on('error', resolve);
      };
    });
    const c = new RawHttpConnection(net.connect(drained.port, '127.0.0.1'));
    c.send('GET /watch HTTP/1.1\r\nhost: front\r\nx-caller: alice\r\n\r\n');
    const head = await c.next({ head: true });
    expect(head.status).toBe(200);
    const closing = drained.close(200);
    // Within the grace the exchange goes on: what the agent sends still arrives.
    stream!.write('second');
    await expect.poll(() => c.received.toString('latin1')).toMatch(/second/);
    await closing;
    await c.closed;
    // Cut: the caller went away, so the stream is cancelled at the agent too.
    expect(await reset).toMatchObject({ code: TunnelErrorCode.CANCELLED });
  });
});
