// The extension proxy as Argo CD's API server calls it, through real processes: extension-proxy
// → gateway → agent → a real HTTP backend inside the "workload cluster".
import { connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { argocdHeaders, mapFor, RESOURCE_PROXY_URL, rssOf, type Stack, startStack } from './harness.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack();
}, 90_000);

afterAll(async () => {
  await s?.close();
});

type Echo = { cluster: string; url: string; method: string; headers: Record<string, string>; body: string };

describe('routing and headers, as Argo CD sends them', () => {
  it('reaches the extension in the cluster named by Argocd-Target-Cluster-Name, with the Argocd-* headers and the Secret header, never the user Cookie or Authorization', async () => {
    const r = await s.get('/metrics/api/datasources?orgId=1', {
      ...argocdHeaders({ name: 'agent-a' }),
      // Argo CD strips these; were it ever not to, we strip them again.
      Cookie: 'argocd.token=user-session-token',
      Authorization: 'Bearer user-token',
    });
    expect(r.status).toBe(200);
    const echo = JSON.parse(r.body) as Echo;
    expect(echo.cluster).toBe('cluster-a');
    expect(echo.url).toBe('/grafana/api/datasources?orgId=1');
    expect(echo.headers.cookie).toBeUndefined();
    expect(echo.headers.authorization).toBe('Bearer token-of-cluster-a');
    expect(echo.headers['argocd-application-name']).toBe('argocd:guestbook');
    expect(echo.headers['argocd-project-name']).toBe('default');
    expect(echo.headers['argocd-namespace']).toBe('argocd');
    expect(echo.headers['argocd-target-cluster-name']).toBe('agent-a');
    expect(echo.headers['argocd-username']).toBe('alice');
    expect(echo.headers['argocd-user-groups']).toBe('devs,ops');
    // The backend tried to plant a cookie on the Argo CD origin: it never reaches the browser.
    expect(r.headers['set-cookie']).toBeUndefined();
  });

  it("passes the Argo CD server's trace context to the backend through the Open, never as a forwarded header", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const r = await s.get('/metrics/api/health', {
      ...argocdHeaders({ name: 'agent-a' }),
      traceparent,
      tracestate: 'vendor=1',
    });
    expect(r.status).toBe(200);
    const echo = JSON.parse(r.body) as Echo;
    expect(echo.headers.traceparent).toBe(traceparent);
    expect(echo.headers.tracestate).toBe('vendor=1');
    // A malformed one is dropped at the proxy, not carried into the cluster.
    const bad = await s.get('/metrics/api/health', {
      ...argocdHeaders({ name: 'agent-a' }),
      traceparent: 'x',
    });
    expect((JSON.parse(bad.body) as Echo).headers.traceparent).toBeUndefined();
  });

  it('reaches the other agent by the cluster URL registration wrote (ours and argocd-agent form)', async () => {
    const ours = await s.get('/metrics/x', argocdHeaders({ url: `${RESOURCE_PROXY_URL}/clusters/agent-b` }));
    expect(ours.status).toBe(200);
    expect((JSON.parse(ours.body) as Echo).cluster).toBe('cluster-b');
    expect((JSON.parse(ours.body) as Echo).headers.authorization).toBe('Bearer token-of-cluster-b');
    const theirs = await s.get(
      '/metrics/x',
      argocdHeaders({ url: `${RESOURCE_PROXY_URL}?agentName=agent-b` }),
    );
    expect((JSON.parse(theirs.body) as Echo).cluster).toBe('cluster-b');
    const both = await s.get(
      '/metrics/x',
      argocdHeaders({ name: 'agent-a', url: `${RESOURCE_PROXY_URL}/clusters/agent-a` }),
    );
    expect((JSON.parse(both.body) as Echo).cluster).toBe('cluster-a');
  });

  it('streams a request body to the backend', async () => {
    const r = await s.get('/metrics/api/query', argocdHeaders({ name: 'agent-b' }), {
      method: 'POST',
      body: '{"q":"up"}',
    });
    expect(JSON.parse(r.body)).toMatchObject({ cluster: 'cluster-b', method: 'POST', body: '{"q":"up"}' });
  });

  it.each([
    ['no target', {}, 400, 'BadRequest', 'no target cluster'],
    [
      'a URL registration never wrote',
      { url: 'https://elsewhere.example/clusters/agent-a' },
      400,
      'BadRequest',
      'not a cluster URL',
    ],
    [
      'a name and a URL that disagree',
      { name: 'agent-a', url: `${RESOURCE_PROXY_URL}/clusters/agent-b` },
      400,
      'BadRequest',
      'different agents',
    ],
    ['a name that is not an agent name', { name: 'Not An Agent' }, 400, 'BadRequest', 'not an agent name'],
  ])('refuses %s with a clear 4xx', async (_what, target, code, reason, message) => {
    const r = await s.get('/metrics/x', argocdHeaders(target));
    expect(r.status).toBe(code);
    const body = JSON.parse(r.body) as { kind: string; reason: string; message: string };
    expect(body.kind).toBe('Status');
    expect(body.reason).toBe(reason);
    expect(body.message).toContain(message);
  });

  it('answers 404 with a Status for an extension the agent does not serve', async () => {
    const r = await s.get('/cost/x', argocdHeaders({ name: 'agent-a' }));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
    expect(JSON.parse(r.body).message).toContain('"cost" is not served by agent agent-a');
  });

  it('answers 502 when the backend behind the extension is down', async () => {
    const r = await s.get('/down/x', argocdHeaders({ name: 'agent-a' }));
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', reason: 'BadGateway' });
  });
});

describe('only the Argo CD server may call', () => {
  it('refuses a caller without a certificate (401)', async () => {
    const r = await s.get('/metrics/x', argocdHeaders({ name: 'agent-a' }), { cert: null });
    expect(r.status).toBe(401);
  });

  it('refuses a caller certificate of someone else (403), and an agent certificate (401)', async () => {
    const other = await s.get('/metrics/x', argocdHeaders({ name: 'agent-a' }), {
      cert: await s.pki.callerCert('agent-a'),
    });
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body).message).toContain('agent-a is not on the allow-list');
    const agentCred = await s.get('/metrics/x', argocdHeaders({ name: 'agent-a' }), {
      cert: await s.pki.agentCert('argocd-server'),
    });
    expect(agentCred.status).toBe(401);
  });

  it("accepts the Argo CD server's bearer token (as argocd-secret would supply it), and nobody else's", async () => {
    const ok = await s.get(
      '/metrics/x',
      {
        ...argocdHeaders({ name: 'agent-a' }),
        Authorization: `Bearer ${await s.tokens.issue('argocd-server')}`,
      },
      { cert: null },
    );
    expect(ok.status).toBe(200);
    // Our credential is not the backend's: it sees the header from its own agent's Secret.
    expect((JSON.parse(ok.body) as Echo).headers.authorization).toBe('Bearer token-of-cluster-a');
    const other = await s.get(
      '/metrics/x',
      {
        ...argocdHeaders({ name: 'agent-a' }),
        Authorization: `Bearer ${await s.tokens.issue('someone-else')}`,
      },
      { cert: null },
    );
    expect(other.status).toBe(403);
    const { TokenAuthority } = await import('@pullplane/auth');
    const foreign = await TokenAuthority.generate({ audience: 'extension-proxy' });
    const forged = await s.get(
      '/metrics/x',
      {
        ...argocdHeaders({ name: 'agent-a' }),
        Authorization: `Bearer ${await foreign.issue('argocd-server')}`,
      },
      { cert: null },
    );
    expect(forged.status).toBe(401);
  });

  it('ignores forged mesh identity headers on its TLS listener', async () => {
    const before = s.backends['agent-a']!.seen.length;
    const r = await s.get(
      '/metrics/x',
      {
        ...argocdHeaders({ name: 'agent-a' }),
        'x-forwarded-client-cert': 'URI=spiffe://cluster.local/ns/argocd/sa/argocd-server',
        'l5d-client-id': 'argocd-server.argocd.serviceaccount.identity.linkerd.cluster.local',
      },
      { cert: null },
    );
    expect(r.status).toBe(401);
    expect(s.backends['agent-a']!.seen.length).toBe(before);
  });
});

describe('paths cannot leave the extension', () => {
  const raw = (path: string) =>
    new Promise<string>((resolve, reject) => {
      const sock = tlsConnect(
        {
          host: '127.0.0.1',
          port: s.proxyPort,
          ca: s.pki.ca.certPem,
          servername: 'localhost',
          cert: s.argocdCert.certPem,
          key: s.argocdCert.keyPem,
        },
        () =>
          sock.write(
            `GET ${path} HTTP/1.1\r\nhost: x\r\nargocd-target-cluster-name: agent-a\r\nconnection: close\r\n\r\n`,
          ),
      );
      let out = '';
      sock.on('data', (d: Buffer) => {
        out += d.toString();
      });
      sock.on('end', () => resolve(out));
      sock.on('error', reject);
    });

  it.each(['/metrics/../down/x', '/metrics/%2e%2e/x', '/metrics/a%2Fb', '/metrics//etc', '/..%2fdown/x'])(
    'refuses %s with 400 and the backend never sees it',
    async (path) => {
      const before = s.backends['agent-a']!.seen.length;
      const out = await raw(path);
      expect(out).toMatch(/^HTTP\/1\.1 400/);
      const ok = await s.get('/metrics/after', argocdHeaders({ name: 'agent-a' }));
      expect(ok.status).toBe(200);
      expect(s.backends['agent-a']!.seen.length).toBe(before + 1);
      expect(s.backends['agent-a']!.seen.at(-1)!.url).toBe('/grafana/after');
    },
  );
});

describe('streaming', () => {
  it('delivers server-sent events as they are sent', async () => {
    const backend = s.backends['agent-a']!;
    backend.sse = undefined;
    const dispatcher = s.client();
    const res = await request(`https://127.0.0.1:${s.proxyPort}/metrics/events`, {
      dispatcher,
      headers: { ...argocdHeaders({ name: 'agent-a' }), accept: 'text/event-stream' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    const it = res.body[Symbol.asyncIterator]();
    // Each event is sent only after the previous one arrived: nothing on the way may hold them.
    for (let i = 1; i <= 3; i++) {
      backend.sse!.write(`id: ${i}\ndata: {"n":${i}}\n\n`);
      const { value } = await it.next();
      expect(Buffer.from(value as Uint8Array).toString()).toBe(`id: ${i}\ndata: {"n":${i}}\n\n`);
    }
    backend.sse!.end();
    expect((await it.next()).done).toBe(true);
    await dispatcher.close();
  });

  it('downloads 1, 10 and 100 MiB with the memory of every process flat: growth bounded by windows and budgets, not the body', async () => {
    const MiB = 1024 * 1024;
    const pids = {
      'extension-proxy': s.proxy.child.pid!,
      gateway: s.gateway.child.pid!,
      agent: s.agents['agent-b']!.child.pid!,
    };
    // What each process may hold for one stream, by design: the gateway the agent's relay share
    // (16 MiB by default); the agent and the proxy their tunnel's or links' window growth budget
    // (8 MiB) plus one window. Heap and allocator slack come on top: 24 MiB.
    const SLACK = 24 * MiB;
    const bound: Record<string, number> = {
      'extension-proxy': 8 * MiB + 4 * MiB + SLACK,
      gateway: 16 * MiB + SLACK,
      agent: 8 * MiB + 4 * MiB + SLACK,
    };
    // Warm the path first, so the measurement sees streaming, not first-use allocations.
    await s.get('/metrics/big?bytes=4194304', argocdHeaders({ name: 'agent-b' }));
    const growth: Record<string, Record<number, number>> = {};
    for (const size of [1, 10, 100]) {
      const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, rssOf(pid)]));
      const peak = { ...before };
      const dispatcher = s.client();
      const total = size * MiB;
      const res = await request(`https://127.0.0.1:${s.proxyPort}/metrics/big?bytes=${total}`, {
        dispatcher,
        headers: argocdHeaders({ name: 'agent-b' }),
      });
      let got = 0;
      let n = 0;
      // Sampled by bytes received, not by time: every 16 chunks.
      for await (const chunk of res.body) {
        got += (chunk as Buffer).length;
        if (++n % 16 === 0)
          for (const [k, pid] of Object.entries(pids)) peak[k] = Math.max(peak[k]!, rssOf(pid));
      }
      await dispatcher.close();
      expect(got).toBe(total);
      for (const k of Object.keys(pids)) {
        growth[k] = { ...growth[k], [size]: peak[k]! - before[k]! };
      }
    }
    const shown = Object.entries(growth)
      .map(([k, g]) => `${k}: ${[1, 10, 100].map((m) => `${m} MiB +${(g[m]! / MiB).toFixed(1)}`).join(', ')}`)
      .join('; ');
    console.info(`peak RSS growth per body size: ${shown}`);
    for (const k of Object.keys(pids)) {
      for (const size of [1, 10, 100]) {
        // Buffering the body anywhere would grow a process by about the body's size: the bound
        // (at most 40 MiB) holds for 100 MiB as for 1 MiB.
        expect(growth[k]![size]!, `${k} grew by more than its bound (${shown})`).toBeLessThan(bound[k]!);
      }
    }
  }, 180_000);

  it('carries a WebSocket both ways and closes it from either side', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${s.proxyPort}/metrics/api/live/ws`, {
      ca: s.pki.ca.certPem,
      // ws hands TLS options on to tls.connect, whose servername its types do not list.
      ...{ servername: 'localhost' },
      cert: s.argocdCert.certPem,
      key: s.argocdCert.keyPem,
      headers: argocdHeaders({ name: 'agent-b' }),
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const next = () => new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    for (const msg of ['hello', 'x'.repeat(200_000)]) {
      const reply = next();
      ws.send(msg);
      expect(await reply).toBe(`cluster-b:${msg}`);
    }
    expect(s.backends['agent-b']!.seen.at(-1)).toMatchObject({ method: 'WS', url: '/grafana/api/live/ws' });
    expect(s.backends['agent-b']!.seen.at(-1)!.headers.authorization).toBe('Bearer token-of-cluster-b');
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.close(1000, 'done');
    expect(await closed).toBe(1000);
  });

  it('refuses a WebSocket from a caller that is not the Argo CD server', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${s.proxyPort}/metrics/ws`, {
      ca: s.pki.ca.certPem,
      // ws hands TLS options on to tls.connect, whose servername its types do not list.
      ...{ servername: 'localhost' },
      headers: argocdHeaders({ name: 'agent-b' }),
    });
    const status = await new Promise<number>((resolve) =>
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(401);
  });
});

describe('operations', () => {
  it('serves a changed extension map without restarting the agent', async () => {
    const agent = s.agents['agent-a']!;
    const loads = () => agent.lines().filter((l) => l.msg === 'extension map loaded').length;
    const before = loads();
    expect((await s.get('/fresh/x', argocdHeaders({ name: 'agent-a' }))).status).toBe(404);
    s.writeMap(
      'agent-a',
      mapFor(s.backends['agent-a']!, `  - name: fresh\n    url: ${s.backends['agent-a']!.url}/fresh-base\n`),
    );
    await agent.waitForLine(() => loads() > before, 20_000);
    const r = await s.get('/fresh/x', argocdHeaders({ name: 'agent-a' }));
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as Echo).url).toBe('/fresh-base/x');
    expect(agent.child.exitCode).toBeNull();
    expect(agent.lines().filter((l) => l.msg === 'tunnel established')).toHaveLength(1);
  });

  it('counts requests per extension and agent in its metrics', async () => {
    const text = await (await request(`http://127.0.0.1:${s.metricsPort}/metrics`)).body.text();
    expect(text).toMatch(
      /extension_proxy_requests_total\{extension="metrics",agent="agent-a",code="200"\} [1-9]/,
    );
    expect(text).toMatch(
      /extension_proxy_errors_total\{extension="metrics",agent="_none",reason="NO_TARGET"\} 1/,
    );
    expect(text).toMatch(
      /extension_proxy_request_duration_seconds_count\{extension="metrics",agent="agent-b"\} [1-9]/,
    );
  });

  it('writes an audit line per request with the Argo CD user and application', async () => {
    await s.get('/metrics/audit-me', argocdHeaders({ name: 'agent-a' }, 'bob'));
    const line = await s.proxy.waitForLine((l) => l.msg === 'extension request' && l.path === '/audit-me');
    expect(line).toMatchObject({
      caller: 'argocd-server',
      via: 'mtls',
      agent: 'agent-a',
      extension: 'metrics',
      status: 200,
      argocd: { user: 'bob', application: 'argocd:guestbook', project: 'default' },
    });
  });

  it('answers 502 at once for an agent that disconnected', async () => {
    await s.agents['agent-b']!.stop();
    // Presence removal reaches the proxy; from then on the answer comes from its table.
    let r = await s.get('/metrics/x', argocdHeaders({ name: 'agent-b' }));
    const deadline = Date.now() + 15_000;
    while (r.status === 200 && Date.now() < deadline)
      r = await s.get('/metrics/x', argocdHeaders({ name: 'agent-b' }));
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body).message).toContain('Agent is not connected');
    await s.startAgent('agent-b');
  });
});
