import net from 'node:net';
import { OpenExchanges } from '@pullplane/auth';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { RawHttpConnection } from '@pullplane/testing';
import { type LogicalStream, TunnelError, TunnelErrorCode } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFront, type HttpFront, type StreamOpener } from '../src/index.js';
import { type RouteLog, testRoute, tunnelPair } from './support.js';

// The front on its own: a real node:http listener on port 0 and a route of the smallest kind,
// forwarding over a real multiplexer pair whose agent end each test plays by hand.

/** How the agent end answers each stream (set per test). */
let answer: (s: LogicalStream) => void = () => undefined;
const held: LogicalStream[] = [];
const pair = tunnelPair((s) => answer(s));
const router: StreamOpener = {
  open: (agent, init) => {
    if (agent === 'nowhere')
      throw new TunnelError(TunnelErrorCode.NOT_FOUND, 'agent nowhere is not connected');
    return pair.router.open(agent, init);
  },
};
const log: RouteLog = { reports: [], heads: 0 };
// Named as a service names them (`pullplane_…`).
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
const openExchanges = new OpenExchanges();
let front: HttpFront;

beforeAll(async () => {
  front = createHttpFront(testRoute(log), {
    router,
    logger: pino({ level: 'silent' }),
    registry,
    host: '127.0.0.1',
    port: 0,
    requestTimeoutMs: 300,
    maxRequestBodyBytes: 1024,
    openExchanges,
  });
  await front.listen();
});
afterAll(async () => {
  await front?.close(0);
  pair.close();
});
afterEach(() => {
  answer = () => undefined;
  for (const s of held.splice(0)) if (!s.destroyed) s.reset(TunnelErrorCode.CANCELLED, 'test over');
});

async function connection(): Promise<RawHttpConnection> {
  const socket = net.connect(front.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return new RawHttpConnection(socket);
}
const request = (method: string, path: string, headers: Record<string, string> = {}, body = '') =>
  `${method} ${path} HTTP/1.1\r\nhost: front\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}${body ? `content-length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`;
/** One request on a fresh connection; the report of its exchange arrives with or after the answer. */
async function exchange(method: string, path: string, headers: Record<string, string> = {}, body = '') {
  const c = await connection();
  const before = log.reports.length;
  c.send(request(method, path, headers, body));
  const res = await c.next();
  c.destroy();
  return { res, status: JSON.parse(res.body.toString() || '{}'), reports: () => log.reports.slice(before) };
}
const openedSoFar = () => pair.opened.length;
const framingErrors = async (reason: string) =>
  (await registry.getSingleMetric('pullplane_proxy_response_framing_errors_total')?.get())?.values.find(
    (v) => v.labels.proxy === 'test' && v.labels.reason === reason,
  )?.value ?? 0;

describe('refusals', () => {
  it('answers a screened method before any credential is looked at, and opens nothing', async () => {
    const opened = openedSoFar();
    const { res, status, reports } = await exchange('TRACE', '/x', { 'x-caller': 'alice' });
    expect(res.status).toBe(405);
    expect(status).toMatchObject({
      kind: 'Status',
      code: 405,
      details: { causes: [{ reason: 'TEST_SCREENED' }] },
    });
    expect(openedSoFar()).toBe(opened);
    expect(reports()).toMatchObject([{ status: 405, failure: 'SCREENED', accepted: false }]);
  });

  it("answers a refused caller with the route's Status, keeping what the refusal worked out for the report", async () => {
    const opened = openedSoFar();
    const none = await exchange('GET', '/x');
    expect([none.res.status, none.status.reason, none.status.message]).toEqual([
      401,
      'Unauthorized',
      'no caller',
    ]);
    const mallory = await exchange('GET', '/x', { 'x-caller': 'mallory', 'x-agent': 'agent-b' });
    expect(mallory.res.status).toBe(403);
    expect(mallory.reports()).toMatchObject([
      { accepted: false, target: { agent: 'agent-b' }, failure: 'NOT_ALLOWED' },
    ]);
    expect(openedSoFar()).toBe(opened);
  });

  it('refuses a request the route does not admit after accepting its caller, and opens nothing', async () => {
    const opened = openedSoFar();
    const { res, status, reports } = await exchange('GET', '/admit-refused', { 'x-caller': 'alice' });
    expect([res.status, status.message]).toEqual([403, 'not allowed: not this path']);
    expect(reports()).toMatchObject([
      { accepted: true, target: { caller: 'alice' }, failure: 'NOT_ALLOWED' },
    ]);
    expect(openedSoFar()).toBe(opened);
  });

  it("refuses a declared body over the limit with the route's TOO_LARGE before opening a stream", async () => {
    const opened = openedSoFar();
    const { res, status } = await exchange('POST', '/x', { 'x-caller': 'alice' }, 'x'.repeat(2048));
    expect([res.status, status.message]).toEqual([413, 'request body exceeds the limit: 2048 bytes > 1024']);
    expect(openedSoFar()).toBe(opened);
  });
});

describe('forwarding', () => {
  it("sends the route's headers and relays the agent's answer without the headers the route strips", async () => {
    answer = (s) => {
      s.respond(200, [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'Set-Cookie', value: 'argocd.token=planted' },
        { name: 'X-Kept', value: 'yes' },
      ]);
      s.end('{"ok":true}');
    };
    const heads = log.heads;
    const { res, reports } = await exchange('GET', '/x?q=1', { 'x-caller': 'alice', 'x-probe': 'on' });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('{"ok":true}');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['x-kept']).toBe('yes');
    const open = pair.opened.at(-1)!;
    expect(open.head.case === 'http' && open.head.value.path).toBe('/x?q=1');
    const sent = open.head.case === 'http' ? open.head.value.headers.map((h) => h.name.toLowerCase()) : [];
    expect(sent).toContain('x-probe');
    expect(sent).not.toContain('x-caller');
    expect(log.heads).toBe(heads + 1);
    expect(reports()).toMatchObject([{ status: 200, accepted: true, bytesOut: 11 }]);
    expect(reports()[0]!.failure).toBeUndefined();
  });

  it.each([
    ['an agent no gateway holds', 'nowhere', undefined, 502, 'TEST_NOT_CONNECTED', 'ServiceUnavailable'],
    ['an agent that refuses the stream', 'agent-a', TunnelErrorCode.REFUSED, 404, 'TEST_REFUSED', 'NotFound'],
    ['a lost tunnel', 'agent-a', TunnelErrorCode.GOING_AWAY, 502, 'TEST_TUNNEL_LOST', 'BadGateway'],
    ['any other reset', 'agent-a', TunnelErrorCode.INTERNAL, 500, 'TEST_FAILED', 'InternalError'],
  ])('answers %s with the name the route gives it', async (_what, agent, code, status, cause, reason) => {
    answer = (s) => {
      if (code !== undefined) s.reset(code, 'from the agent');
    };
    const r = await exchange('GET', '/x', { 'x-caller': 'alice', 'x-agent': agent });
    expect(r.res.status).toBe(status);
    expect(r.status).toMatchObject({ reason, details: { causes: [{ reason: cause }] } });
  });

  it('ends a request whose head does not come in time with TIMEOUT, and resets its stream', async () => {
    const reset = new Promise<unknown>((resolve) => {
      answer = (s) => {
        held.push(s);
        s.on('error', resolve);
      };
    });
    const { res, status } = await exchange('GET', '/slow', { 'x-caller': 'alice' });
    expect([res.status, status.message]).toEqual([
      504,
      'the agent did not answer in time: no answer within 300 ms',
    ]);
    // The Open carried no deadline of its own (the agent end's is off): the front's ended it.
    expect(await reset).toMatchObject({ code: TunnelErrorCode.DEADLINE_EXCEEDED });
  });
});

describe('revocation', () => {
  it.each([
    [
      'agent',
      {},
      403,
      'TEST_AGENT_REVOKED',
      () => openExchanges.endAgent('agent-r', 'agent agent-r revoked: gone'),
    ],
    [
      'token',
      { 'x-jti': 'jti-1' },
      401,
      'TEST_TOKEN_REVOKED',
      () => openExchanges.endToken('jti-1', 'caller token jti-1 revoked'),
    ],
  ])(
    'of its %s ends an open exchange with the name the route gives it, and why',
    async (_k, extra, code, cause, revoke) => {
      const opened = new Promise<void>((resolve) => {
        answer = (s) => {
          held.push(s);
          resolve();
        };
      });
      const c = await connection();
      c.send(request('GET', '/watch', { 'x-caller': 'alice', 'x-agent': 'agent-r', ...extra }));
      await opened;
      expect(revoke()).toBe(1);
      const res = await c.next();
      c.destroy();
      expect(res.status).toBe(code);
      const body = JSON.parse(res.body.toString());
      expect(body.details.causes[0].reason).toBe(cause);
      expect(body.message).toMatch(/revoked/);
      expect(openExchanges.size).toBe(0);
    },
  );
});

describe('framing and reports', () => {
  it('cuts a body that overruns its Content-Length, counts it, and reports the exchange once as cut', async () => {
    answer = (s) => {
      s.respond(200, [{ name: 'Content-Length', value: '5' }]);
      s.end('helloHTTP/1.1 200 OK\r\n\r\n');
    };
    const before = await framingErrors('body_over_length');
    const c = await connection();
    const reportsBefore = log.reports.length;
    c.send(request('GET', '/x', { 'x-caller': 'alice' }));
    const res = await c.next();
    expect(res.body.toString()).toBe('hello');
    expect((await c.closed).unread.length).toBe(0);
    expect(await framingErrors('body_over_length')).toBe(before + 1);
    const mine = log.reports.slice(reportsBefore);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: 200, failure: 'MID_BODY', bytesOut: 5 });
  });

  it('reports an exchange once when its streamed body passes the limit after the answer began', async () => {
    answer = (s) => {
      held.push(s);
      s.respond(200, [{ name: 'Content-Type', value: 'text/plain' }]);
      s.write('streaming');
    };
    const c = await connection();
    const before = log.reports.length;
    c.send('POST /upload HTTP/1.1\r\nhost: front\r\nx-caller: alice\r\ntransfer-encoding: chunked\r\n\r\n');
    expect((await c.next({ head: true })).status).toBe(200);
    const chunk = 'x'.repeat(600);
    c.send(`258\r\n${chunk}\r\n258\r\n${chunk}\r\n`);
    await c.closed;
    // A later exchange, start to end: had the cut one been reported again, that would be in by now.
    expect((await exchange('TRACE', '/after', { 'x-caller': 'alice' })).res.status).toBe(405);
    const mine = log.reports.slice(before).filter((r) => r.req.url === '/upload');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ failure: 'TOO_LARGE', bytesIn: 1200 });
  });

  it('answers FAILED when the route itself throws, and reports that exchange once', async () => {
    const broken = createHttpFront(
      { ...testRoute(log), accept: () => Promise.reject(new Error('bug')) },
      {
        router,
        logger: pino({ level: 'silent' }),
        registry: new Registry(),
        host: '127.0.0.1',
        port: 0,
        requestTimeoutMs: 300,
        maxRequestBodyBytes: 1024,
      },
    );
    await broken.listen();
    try {
      const socket = net.connect(broken.port, '127.0.0.1');
      const c = new RawHttpConnection(socket);
      const before = log.reports.length;
      c.send(request('GET', '/x', { 'x-caller': 'alice' }));
      const res = await c.next();
      c.destroy();
      expect([res.status, JSON.parse(res.body.toString()).message]).toEqual([
        500,
        'the request failed: internal proxy error',
      ]);
      expect(log.reports.slice(before)).toMatchObject([{ status: 500, failure: 'FAILED' }]);
    } finally {
      await broken.close(0);
    }
  });
});

describe('upgrades', () => {
  it('refuses an upgrade the route does not forward with its Status, closes the connection, opens nothing', async () => {
    const opened = openedSoFar();
    const c = await connection();
    const before = log.reports.length;
    c.send(request('GET', '/ws', { 'x-caller': 'alice', connection: 'Upgrade', upgrade: 'websocket' }));
    const res = await c.next();
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString()).details.causes[0].reason).toBe('TEST_NO_UPGRADES');
    await c.closed;
    expect(openedSoFar()).toBe(opened);
    expect(log.reports.slice(before)).toMatchObject([{ status: 400, upgrade: true, failure: 'NO_UPGRADES' }]);
  });
});

describe('the listener', () => {
  it('answers a malformed request with a bare 400 and closes the connection', async () => {
    const c = await connection();
    c.send('NOT HTTP AT ALL\r\n\r\n');
    const res = await c.next();
    expect(res.status).toBe(400);
    await c.closed;
  });

  it('has no TLS to reload when it serves plaintext', () => {
    expect(() => front.reloadTls({ cert: 'x', key: 'y' })).toThrow(/the test proxy serves plaintext/);
  });
});
