import { TokenAuthority } from '@pullplane/auth';
import type { Open } from '@pullplane/proto';
import { openInitOf } from '@pullplane/router';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { createMemoryLink, type LogicalStream, Multiplexer, TunnelErrorCode } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createResourceProxy, type ResourceProxy } from '../src/index.js';

// The resource proxy on its own: a real HTTP listener on port 0, callers with real tokens,
// and behind it a real tunnel multiplexer pair whose agent end the test answers by hand.
// The Open goes on without the requester's timeout (as to an agent too old to enforce one):
// nothing but the proxy's own deadline can end a request the agent never answers.
let proxy: ResourceProxy;
let tokens: TokenAuthority;
let caller: string;
let impersonator: string;
/** How the agent end answers each stream (set per test). */
let answer: (s: LogicalStream) => void = () => undefined;
const opened: Open[] = [];

beforeAll(async () => {
  tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  caller = await tokens.issue('argocd', { agents: ['agent-a'] });
  impersonator = await tokens.issue('ops-admin', { agents: ['agent-a'] });
  const link = createMemoryLink();
  const requester = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({
    sink: link.b,
    idParity: 'even',
    onStream: (s) => {
      opened.push(s.open);
      answer(s);
    },
  });
  link.connect(
    (f) => requester.receive(f),
    (f) => agent.receive(f),
  );
  proxy = createResourceProxy({
    router: {
      open: (name, init) => {
        expect(name).toBe('agent-a');
        return requester.open({ ...openInitOf(init), timeoutMs: 0 });
      },
    },
    logger: pino({ level: 'silent' }),
    registry: createMetricsRegistry({ collectDefaultMetrics: false }),
    host: '127.0.0.1',
    port: 0,
    auth: { tokens },
    requestTimeoutMs: 500,
    maxRequestBodyBytes: 1024 * 1024,
    impersonators: ['ops-admin'],
  });
  await proxy.listen();
});
afterAll(() => proxy?.close(0));

const url = (path: string) => `http://127.0.0.1:${proxy.port}${path}`;
const headersOf = (o: Open) =>
  o.head.case === 'http'
    ? Object.fromEntries(o.head.value.headers.map((h) => [h.name.toLowerCase(), h.value]))
    : {};

describe('request headers on the way to the agent', () => {
  it('drops credentials, identities, impersonation and hop-by-hop headers, keeps the rest', async () => {
    answer = (s) => {
      s.respond(200, [{ name: 'Content-Type', value: 'application/json' }]);
      s.end('{}');
    };
    opened.length = 0;
    const res = await fetch(url('/clusters/agent-a/api/v1/pods'), {
      headers: {
        authorization: `Bearer ${caller}`,
        'impersonate-user': 'system:admin',
        'impersonate-group': 'system:masters',
        'x-remote-user': 'admin',
        'x-remote-extra-scopes': 'all',
        cookie: 'session=1',
        'proxy-authorization': 'Basic eDp5',
        'x-probe': 'kept',
        accept: 'application/json',
      },
    });
    expect(res.status).toBe(200);
    expect(opened).toHaveLength(1);
    const sent = headersOf(opened[0]!);
    expect(
      Object.keys(sent).filter((n) => /^(authorization|cookie|proxy-|impersonate-|x-remote-)/.test(n)),
    ).toEqual([]);
    expect(sent).toMatchObject({ 'x-probe': 'kept', accept: 'application/json' });
    expect(opened[0]!.head.value).toMatchObject({ method: 'GET', path: '/api/v1/pods' });
  });

  it('passes Impersonate-* for a caller on the impersonators list only', async () => {
    answer = (s) => {
      s.respond(200, []);
      s.end();
    };
    opened.length = 0;
    for (const token of [caller, impersonator]) {
      const res = await fetch(url('/clusters/agent-a/api'), {
        headers: { authorization: `Bearer ${token}`, 'impersonate-user': 'jane' },
      });
      expect(res.status).toBe(200);
    }
    expect(opened.map((o) => headersOf(o)['impersonate-user'])).toEqual([undefined, 'jane']);
  });
});

describe('the route deadline', () => {
  it('answers 504 and cancels the stream when the agent never answers', async () => {
    const held: LogicalStream[] = [];
    const cancelled = new Promise<unknown>((resolve) => {
      answer = (s) => {
        held.push(s);
        s.on('error', resolve);
      };
    });
    const res = await fetch(url('/clusters/agent-a/api/v1/namespaces'), {
      headers: { authorization: `Bearer ${caller}` },
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ kind: 'Status', code: 504 });
    // The agent end learns of it too: the stream is reset, not left open.
    expect(await cancelled).toMatchObject({ code: TunnelErrorCode.DEADLINE_EXCEEDED });
    expect(held).toHaveLength(1);
  });

  it('does not apply to a watch, which may stay quiet for long', async () => {
    let stream: LogicalStream | undefined;
    answer = (s) => {
      stream = s;
      s.respond(200, [{ name: 'Content-Type', value: 'application/json' }]);
    };
    const res = await fetch(url('/clusters/agent-a/api/v1/pods?watch=true'), {
      headers: { authorization: `Bearer ${caller}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    // An event sent after a 504 would have been due arrives: the watch was not cut.
    const late = setTimeout(() => stream!.write('{"type":"ADDED"}\n'), 1_000); // wait-ok: an event sent after the request deadline has passed is the scenario
    const chunk = await reader.read();
    clearTimeout(late);
    expect(Buffer.from(chunk.value!).toString()).toBe('{"type":"ADDED"}\n');
    await reader.cancel();
  });
});

describe('upgrades', () => {
  const send = async (text: string) => {
    const { connect } = await import('node:net');
    const socket = connect(proxy.port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
    });
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(text);
    await closed;
    return {
      head: got.slice(0, got.indexOf('\r\n\r\n')),
      body: JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)),
    };
  };

  it('refuses upgrades other than exec, attach and port-forward over WebSocket or SPDY/3.1 with 400 before any credential, and opens nothing', async () => {
    opened.length = 0;
    for (const [line, upgrade] of [
      ['POST /clusters/agent-a/api/v1/namespaces/demo/pods/p/exec?command=sh', 'h2c'],
      ['GET /clusters/agent-a/api/v1/namespaces/demo/pods', 'websocket'],
      ['GET /clusters/agent-a/api/v1/namespaces/demo/pods/p/log', 'SPDY/3.1'],
    ]) {
      const { head, body } = await send(
        `${line} HTTP/1.1\r\nhost: proxy\r\nconnection: Upgrade\r\nupgrade: ${upgrade}\r\n\r\n`,
      );
      expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(body).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
      expect(body.details.causes[0].reason).toBe('RESOURCE_PROXY_UNSUPPORTED');
    }
    expect(opened).toHaveLength(0);
  });

  it('authenticates an exec upgrade like any request: no credentials, 401 and nothing opened', async () => {
    opened.length = 0;
    const { head, body } = await send(
      'GET /clusters/agent-a/api/v1/namespaces/demo/pods/p/exec?command=sh&stdout=true HTTP/1.1\r\nhost: proxy\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-protocol: v5.channel.k8s.io\r\n\r\n',
    );
    expect(head).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(body.details.causes[0].reason).toBe('RESOURCE_PROXY_NO_CREDENTIALS');
    expect(opened).toHaveLength(0);
  });

  it('forwards an exec upgrade with the protocol asked for, and relays the 101 and the bytes after it', async () => {
    opened.length = 0;
    answer = (s) => {
      s.respond(101, [
        { name: 'Upgrade', value: 'SPDY/3.1' },
        { name: 'X-Stream-Protocol-Version', value: 'v4.channel.k8s.io' },
      ]);
      s.pipe(s);
    };
    const { connect } = await import('node:net');
    const socket = connect(proxy.port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n') && !got.endsWith('ping')) socket.write('ping');
      if (got.endsWith('ping')) socket.end();
    });
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(
      `POST /clusters/agent-a/api/v1/namespaces/demo/pods/p/exec?command=sh&stdin=true HTTP/1.1\r\nhost: proxy\r\nauthorization: Bearer ${caller}\r\nconnection: Upgrade\r\nupgrade: SPDY/3.1\r\nx-stream-protocol-version: v4.channel.k8s.io\r\n\r\n`,
    );
    await closed;
    expect(got).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(got).toMatch(/\r\nUpgrade: SPDY\/3\.1\r\n/);
    expect(got).toMatch(/\r\nX-Stream-Protocol-Version: v4\.channel\.k8s\.io\r\n/);
    expect(got.endsWith('\r\n\r\nping')).toBe(true);
    const open = opened[0]!;
    expect(open.head.case === 'http' && open.head.value.upgrade).toBe('SPDY/3.1');
    expect(open.head.case === 'http' && open.head.value.path).toBe(
      '/api/v1/namespaces/demo/pods/p/exec?command=sh&stdin=true',
    );
    const names = open.head.case === 'http' ? open.head.value.headers.map((h) => h.name.toLowerCase()) : [];
    expect(names).toContain('x-stream-protocol-version');
    expect(names).not.toContain('authorization');
  });
});
