import { rmSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { TunnelConnector, type TunnelConnectorOptions } from '@pullplane/agent-core';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { RawHttpConnection } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, logger, startHarness } from './harness.js';

// A hostile agent answers through the resource proxy with a head and a body that disagree.
// Whatever it sends, a caller reading its keep-alive connection in order must never read a
// response the agent wrote inside a body, nor wait on a body that will not come.

/** A stream as the agent serves it. */
type AgentStream = Parameters<TunnelConnectorOptions['onStream']>[0];

const FORGED =
  'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 20\r\n\r\nFORGED-BY-AGENT-EVIL';

/** What agent-evil answers, by request path. */
const answers: Record<string, (s: AgentStream) => void> = {
  '/api/long': (s) => {
    s.respond(200, [{ name: 'Content-Length', value: '5' }]);
    s.end(Buffer.from(`hello${FORGED}`));
  },
  // The extra bytes come in a later Data frame, after the promised ones.
  '/api/long-later': (s) => {
    s.respond(200, [{ name: 'Content-Length', value: '5' }]);
    s.write(Buffer.from('hello'));
    setImmediate(() => s.end(Buffer.from(FORGED)));
  },
  '/api/short': (s) => {
    s.respond(200, [{ name: 'Content-Length', value: '100' }]);
    s.end(Buffer.from('only ten b'));
  },
  '/api/both': (s) => {
    s.respond(200, [
      { name: 'Transfer-Encoding', value: 'chunked' },
      { name: 'Content-Length', value: '5' },
    ]);
    s.end(Buffer.from(`hello${FORGED}`));
  },
  '/api/lengths-agree': (s) => {
    s.respond(200, [
      { name: 'Content-Length', value: '2, 2' },
      { name: 'content-length', value: '2' },
    ]);
    s.end(Buffer.from('ok'));
  },
  '/api/lengths-disagree': (s) => {
    s.respond(200, [
      { name: 'Content-Length', value: '2' },
      { name: 'Content-Length', value: '3' },
    ]);
    s.end(Buffer.from('ok'));
  },
  '/api/length-not-a-number': (s) => {
    s.respond(200, [{ name: 'Content-Length', value: '2x' }]);
    s.end(Buffer.from('ok'));
  },
  '/api/ok': (s) => {
    s.respond(200, [{ name: 'Content-Length', value: '2' }]);
    s.end(Buffer.from('ok'));
  },
};

let h: Harness;
let evil: TunnelConnector;
let caller: { certPem: string; keyPem: string };

beforeAll(async () => {
  h = await startHarness();
  const cert = await h.pki.agentCert('agent-evil');
  caller = await h.pki.callerCert('agent-evil');
  evil = new TunnelConnector({
    agentName: 'agent-evil',
    agentVersion: 'test',
    target: `127.0.0.1:${h.gateway.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(
      Buffer.from(h.pki.ca.certPem),
      Buffer.from(cert.keyPem),
      Buffer.from(cert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    capabilities: ['kube'],
    logger,
    onStream: (s) => {
      const open = s.open.head;
      const path = open.case === 'http' ? open.value.path.split('?')[0]! : '';
      s.resume();
      const answer = answers[path];
      if (answer) answer(s);
      else s.respond(404);
    },
  });
  evil.start();
  const deadline = Date.now() + 10_000;
  while (!h.app.router!.lookup('agent-evil')) {
    if (Date.now() > deadline) throw new Error('agent-evil never connected');
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}, 60_000);

afterAll(async () => {
  await evil?.stop();
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});

/** A keep-alive TLS connection to the proxy as agent-evil's caller. */
async function connection(): Promise<RawHttpConnection> {
  const socket = tlsConnect({
    host: '127.0.0.1',
    port: h.app.proxy!.port,
    ca: h.pki.ca.certPem,
    servername: 'localhost',
    cert: caller.certPem,
    key: caller.keyPem,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  return new RawHttpConnection(socket);
}
const get = (path: string) => `GET ${path} HTTP/1.1\r\nhost: proxy\r\n\r\n`;
const framingErrors = async (reason: string) => {
  const m = await h.registry.getSingleMetric('proxy_response_framing_errors_total')?.get();
  return m?.values.find((v) => v.labels.reason === reason && v.labels.proxy === 'resource')?.value ?? 0;
};

describe('an agent body longer than its Content-Length', () => {
  for (const path of ['/api/long', '/api/long-later']) {
    it(`never reaches the caller as a second response (${path})`, async () => {
      const before = await framingErrors('body_over_length');
      const c = await connection();
      c.send(get(path));
      const first = await c.next();
      expect([first.status, first.body.toString()]).toEqual([200, 'hello']);
      // The client goes on with the same connection, as a pool would: the proxy closed it, so
      // the next response it reads is none at all, never the agent's forged one.
      c.send(get('/api/ok'));
      await expect(c.next()).rejects.toThrow(/connection closed/);
      const { unread } = await c.closed;
      expect(unread.length).toBe(0);
      expect(c.received.toString('latin1')).not.toContain('FORGED');
      expect(await framingErrors('body_over_length')).toBe(before + 1);
    });
  }
});

describe('an agent body shorter than its Content-Length', () => {
  it('closes the connection: a truncated response, never one left waiting or reused', async () => {
    const before = await framingErrors('body_under_length');
    const c = await connection();
    c.send(get('/api/short'));
    await expect(c.next()).rejects.toThrow(/connection closed with .* bytes of an incomplete response/);
    expect(c.received.toString('latin1')).toMatch(/content-length: 100\r\n[\s\S]*only ten b$/i);
    expect(await framingErrors('body_under_length')).toBe(before + 1);
  });
});

describe('an agent head with Transfer-Encoding and Content-Length', () => {
  it('never passes both: the length is dropped and the body re-framed, the connection stays usable', async () => {
    const c = await connection();
    c.send(get('/api/both'));
    const first = await c.next();
    expect(first.headers['content-length']).toBeUndefined();
    expect(first.headers['transfer-encoding']).toBe('chunked');
    // The agent's bytes are one body: inside it, never a response of their own.
    expect(first.body.toString()).toBe(`hello${FORGED}`);
    c.send(get('/api/ok'));
    const second = await c.next();
    expect([second.status, second.body.toString()]).toEqual([200, 'ok']);
    c.destroy();
  });
});

describe('an agent head whose Content-Length is listed more than once', () => {
  it('keeps one length when every value agrees', async () => {
    const c = await connection();
    c.send(get('/api/lengths-agree'));
    const r = await c.next();
    expect([r.status, r.headers['content-length'], r.body.toString()]).toEqual([200, '2', 'ok']);
    c.destroy();
  });

  it.each([
    ['values that disagree', '/api/lengths-disagree'],
    ['a value that is not a number', '/api/length-not-a-number'],
  ])('drops the length and re-frames the body for %s, and counts it', async (_, path) => {
    const before = await framingErrors('bad_content_length');
    const c = await connection();
    c.send(get(path));
    const r = await c.next();
    expect(r.headers['content-length']).toBeUndefined();
    expect([r.status, r.headers['transfer-encoding'], r.body.toString()]).toEqual([200, 'chunked', 'ok']);
    expect(await framingErrors('bad_content_length')).toBe(before + 1);
    c.send(get('/api/ok'));
    const next = await c.next();
    expect([next.status, next.body.toString()]).toEqual([200, 'ok']);
    c.destroy();
  });
});

describe('a well-framed answer', () => {
  it('keeps the connection for the next request', async () => {
    const c = await connection();
    for (let i = 0; i < 3; i++) {
      c.send(get('/api/ok'));
      const r = await c.next();
      expect([r.status, r.body.toString()]).toEqual([200, 'ok']);
    }
    c.destroy();
  });
});
