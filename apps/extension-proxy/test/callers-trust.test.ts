// What the extension proxy's callers can rely on whatever an agent or a backend does, through
// real processes: responses framed as their heads say (a hostile agent cannot put a response
// of its own on the Argo CD server's connection), revocation that means now, and only the
// methods, headers and upgrades Argo CD's proxy extensions use reaching a backend.
import { connect as tlsConnect } from 'node:tls';
import { TunnelConnector, type TunnelConnectorOptions } from '@pullplane/agent-core';
import { type Bus, connectNatsBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { RawHttpConnection } from '@pullplane/testing';
import pino from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { argocdHeaders, type Stack, startStack } from './harness.js';

let s: Stack;
let bus: Bus;
let evil: TunnelConnector;

/** A stream as the agent serves it. */
type AgentStream = Parameters<TunnelConnectorOptions['onStream']>[0];

const FORGED =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 22\r\n\r\n{"cluster":"cluster-b"}';

/** What agent-evil's "extension" answers, by path. */
const answers: Record<string, (s: AgentStream) => void> = {
  '/long': (st) => {
    st.respond(200, [{ name: 'Content-Length', value: '5' }]);
    st.end(Buffer.from(`hello${FORGED}`));
  },
  '/short': (st) => {
    st.respond(200, [{ name: 'Content-Length', value: '100' }]);
    st.end(Buffer.from('only ten b'));
  },
};

beforeAll(async () => {
  s = await startStack();
  bus = await connectNatsBus({ servers: s.nats.url, name: 'test-revoker' });
  const cert = await s.pki.agentCert('agent-evil');
  evil = new TunnelConnector({
    agentName: 'agent-evil',
    agentVersion: 'test',
    target: `127.0.0.1:${s.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(
      Buffer.from(s.pki.ca.certPem),
      Buffer.from(cert.keyPem),
      Buffer.from(cert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    capabilities: ['extension'],
    logger: pino({ level: 'silent' }),
    onStream: (st) => {
      const head = st.open.head;
      const path = head.case === 'extension' ? (head.value.http?.path ?? '') : '';
      st.resume();
      const answer = answers[path];
      if (answer) answer(st);
      else st.respond(404);
    },
  });
  const connected = new Promise((resolve) => evil.once('connected', resolve));
  evil.start();
  await connected;
}, 90_000);

afterAll(async () => {
  await evil?.stop();
  await bus?.close();
  await s?.close();
});

/** A keep-alive TLS connection as the Argo CD server. */
async function connection(): Promise<RawHttpConnection> {
  const socket = tlsConnect({
    host: '127.0.0.1',
    port: s.proxyPort,
    ca: s.pki.ca.certPem,
    servername: 'localhost',
    cert: s.argocdCert.certPem,
    key: s.argocdCert.keyPem,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  return new RawHttpConnection(socket);
}
const raw = (method: string, path: string, agent: string, extra = '') =>
  `${method} ${path} HTTP/1.1\r\nhost: proxy\r\n${Object.entries(argocdHeaders({ name: agent }))
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}${extra}\r\n`;
const metric = async (name: string, labels: Record<string, string>) => {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  const sel = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && sel.split(',').every((p) => l.includes(p)));
  return line ? Number(line.split(' ').at(-1)) : 0;
};

describe('an agent whose body disagrees with its Content-Length', () => {
  it('never puts a second response on the caller connection (longer body)', async () => {
    const c = await connection();
    c.send(raw('GET', '/evil/long', 'agent-evil'));
    const first = await c.next();
    expect([first.status, first.body.toString()]).toEqual([200, 'hello']);
    // The Argo CD server reuses the connection for another cluster's request: what it reads
    // is no response at all (the proxy closed the connection), never agent-evil's forgery.
    c.send(raw('GET', '/metrics/x', 'agent-b'));
    await expect(c.next()).rejects.toThrow(/connection closed/);
    expect((await c.closed).unread.length).toBe(0);
    expect(c.received.toString('latin1')).not.toContain('cluster-b');
    expect(
      await metric('pullplane_proxy_response_framing_errors_total', {
        proxy: 'extension',
        reason: 'body_over_length',
      }),
    ).toBe(1);
  });

  it('closes the caller connection on a shorter body: truncated, never left waiting or reused', async () => {
    const c = await connection();
    c.send(raw('GET', '/evil/short', 'agent-evil'));
    await expect(c.next()).rejects.toThrow(/connection closed with .* bytes of an incomplete response/);
    expect(c.received.toString('latin1')).toMatch(/only ten b$/);
  });
});

describe('methods, headers and upgrades a backend never sees', () => {
  it('refuses TRACE, PROPFIND and PURGE with 405 and Allow; the backend sees only the request after them', async () => {
    const backend = s.backends['agent-a']!;
    const c = await connection();
    for (const method of ['TRACE', 'PROPFIND', 'PURGE']) {
      c.send(raw(method, `/metrics/refused-${method}`, 'agent-a'));
      const r = await c.next();
      expect([method, r.status]).toEqual([method, 405]);
      expect(r.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      expect(JSON.parse(r.body.toString()).details.causes[0].reason).toBe(
        'EXTENSION_PROXY_METHOD_NOT_ALLOWED',
      );
    }
    const seenBefore = backend.seen.length;
    c.send(raw('GET', '/metrics/after-refused', 'agent-a'));
    expect((await c.next()).status).toBe(200);
    c.destroy();
    // The backend got the GET that followed, and none of the refused ones before it.
    expect(backend.seen.slice(seenBefore).map((q) => q.url)).toEqual(['/grafana/after-refused']);
    expect(backend.seen.filter((q) => q.url.includes('refused-'))).toEqual([]);
  });

  it('refuses an h2c upgrade (and any but WebSocket) with 400 before it reaches the backend', async () => {
    const backend = s.backends['agent-a']!;
    for (const upgrade of ['h2c', 'websocket, h2c']) {
      const c = await connection();
      c.send(
        raw(
          'GET',
          '/metrics/upgrade-refused',
          'agent-a',
          `connection: Upgrade, HTTP2-Settings\r\nupgrade: ${upgrade}\r\nhttp2-settings: AAMAAABkAARAAAAAAAIAAAAA\r\n`,
        ),
      );
      const r = await c.next();
      expect([upgrade, r.status]).toEqual([upgrade, 400]);
      expect(JSON.parse(r.body.toString()).details.causes[0].reason).toBe(
        'EXTENSION_PROXY_UNSUPPORTED_UPGRADE',
      );
      await c.closed;
    }
    const after = await s.get('/metrics/after-upgrade', argocdHeaders({ name: 'agent-a' }));
    expect(after.status).toBe(200);
    expect(backend.seen.at(-1)!.url).toBe('/grafana/after-upgrade');
    expect(backend.seen.filter((q) => q.url.includes('upgrade-refused'))).toEqual([]);
  });

  it('strips impersonation and request-rewriting headers', async () => {
    const r = await s.get('/metrics/headers', {
      ...argocdHeaders({ name: 'agent-a' }),
      'Impersonate-User': 'system:admin',
      'Impersonate-Group': 'system:masters',
      'Impersonate-Extra-Scopes': 'all',
      'X-Original-URL': '/admin',
      'X-Rewrite-URL': '/admin',
      'X-HTTP-Method-Override': 'DELETE',
      'X-HTTP-Method': 'DELETE',
      'X-Method-Override': 'DELETE',
      'X-Original-Method': 'DELETE',
      'X-Kept': 'yes',
    });
    expect(r.status).toBe(200);
    const headers = (JSON.parse(r.body) as { headers: Record<string, string> }).headers;
    expect(headers['x-kept']).toBe('yes');
    expect(
      Object.keys(headers).filter((h) => /^impersonate-|^x-(original|rewrite|http-method|method)/.test(h)),
    ).toEqual([]);
  });
});

describe('revocation', () => {
  const tokenHeaders = (token: string, agent = 'agent-a') => ({
    ...argocdHeaders({ name: agent }),
    Authorization: `Bearer ${token}`,
  });
  const tokenGet = (path: string, token: string) => s.get(path, tokenHeaders(token), { cert: null });

  it('refuses a revoked token from the next request on, and ends the event stream it opened', async () => {
    const token = await s.tokens.issue('argocd-server');
    const jti = (await s.tokens.verify(token)).jti;
    expect((await tokenGet('/metrics/x', token)).status).toBe(200);
    const backend = s.backends['agent-a']!;
    backend.sse = undefined;
    const dispatcher = s.client(null);
    const res = await request(`https://127.0.0.1:${s.proxyPort}/metrics/events`, {
      dispatcher,
      headers: { ...tokenHeaders(token), accept: 'text/event-stream' },
    });
    expect(res.statusCode).toBe(200);
    const events = res.body[Symbol.asyncIterator]();
    backend.sse!.write('data: 1\n\n');
    expect(Buffer.from((await events.next()).value as Uint8Array).toString()).toBe('data: 1\n\n');
    const ended = events.next().then(
      (r) => ({ done: r.done, error: undefined as unknown }),
      (error: unknown) => ({ done: true, error }),
    );
    await bus.revocations.add({ kind: 'token', jti, reason: 'leaked', at: new Date().toISOString() });
    // The stream ends (cut: the caller must not take it as a complete answer), and the proxy
    // says why; no sleep: both are events, under a bounded wait.
    const end = await Promise.race([
      ended,
      new Promise((_r, reject) => setTimeout(() => reject(new Error('stream still open after 1 s')), 1_000)), // wait-ok: the bound the issue sets on ending a revoked stream
    ]);
    expect(end).toMatchObject({ done: true });
    expect(String((end as { error: unknown }).error)).toMatch(/terminated|other side closed|socket/i);
    await s.proxy.waitForLine(
      (l) => l.msg === 'ended open requests of a revoked caller token' && l.jti === jti,
    );
    await s.proxy.waitForLine(
      (l) =>
        l.msg === 'extension request' &&
        l.requestId !== undefined &&
        String(l.error).includes(`caller token ${jti} revoked`),
    );
    await dispatcher.close();
    const after = await tokenGet('/metrics/x', token);
    expect(after.status).toBe(401);
    expect(JSON.parse(after.body).message).toMatch(/has been revoked/);
  });

  // Last: agent-b stays revoked for the rest of this stack.
  it("ends a revoked agent's open WebSocket and refuses it from then on", async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${s.proxyPort}/metrics/api/live/ws`, {
      ca: s.pki.ca.certPem,
      ...{ servername: 'localhost' },
      cert: s.argocdCert.certPem,
      key: s.argocdCert.keyPem,
      headers: argocdHeaders({ name: 'agent-b' }),
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    ws.send('before');
    expect(await reply).toBe('cluster-b:before');
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await bus.control.publish({ type: 'agent-revoked', agent: 'agent-b', reason: 'cluster decommissioned' });
    const code = await Promise.race([
      closed,
      new Promise<number>((_r, reject) =>
        setTimeout(() => reject(new Error('WebSocket still open after 1 s')), 1_000),
      ), // wait-ok: the bound the issue sets on ending a revoked stream
    ]);
    // 1006: cut without a close frame, as a revocation cuts it.
    expect(code).toBe(1006);
    // Why, in the proxy's line for that WebSocket: the revocation (its own registry, or the
    // gateway closing the agent's tunnel, whichever came first).
    await s.proxy.waitForLine(
      (l) =>
        l.msg === 'extension request' &&
        l.agent === 'agent-b' &&
        l.status === 101 &&
        /revoked: cluster decommissioned/.test(String(l.error)),
    );
    const after = await s.get('/metrics/x', argocdHeaders({ name: 'agent-b' }));
    expect(after.status).toBe(403);
  });
});
