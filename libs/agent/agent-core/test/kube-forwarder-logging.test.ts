import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { createMemoryLink, Multiplexer } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKubeForwarder } from '../src/index.js';

// Requests log through a child logger with their request id, method and path, made only when
// the request logs something: a request that goes well writes nothing, even at debug.
let backend: http.Server;
let gateway: Multiplexer;
/** Request ids of the agent's streams that closed (what ends a request's span and its hooks). */
const closed: string[] = [];
const lines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    if (req.url?.startsWith('/broken')) {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"kind":"Status","status":"Success"}');
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`, skipTLSVerify: true },
    { name: 'u', token: 't' },
  );
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n'))
        if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const forwarder = createKubeForwarder({
    kubeConfig: kc,
    logger: pino({ level: 'debug' }, sink),
    filter: 'none',
  });
  const link = createMemoryLink();
  gateway = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({
    sink: link.b,
    idParity: 'even',
    onStream: (s) => {
      s.once('close', () => closed.push(s.open.requestId));
      forwarder.handle(s);
    },
  });
  link.connect(
    (f) => gateway.receive(f),
    (f) => agent.receive(f),
  );
});
afterAll(() => {
  backend.closeAllConnections();
  backend.close();
});

const get = (path: string, requestId: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
  requestId,
});

it('logs nothing for a request that goes well, and the request id, method and path for one that fails', async () => {
  const ok = gateway.open(get('/api/v1/namespaces', 'req-ok'));
  expect((await ok.responseHead()).status).toBe(200);
  await text(ok);
  // Answered, the agent's stream closes too (a bodiless request's side read to its end).
  await expect.poll(() => closed).toEqual(['req-ok']);
  const broken = gateway.open(get('/broken/pods', 'req-broken'));
  await expect(broken.responseHead()).rejects.toThrow(/cluster API request failed/);
  await expect.poll(() => lines.length).toBeGreaterThan(1);
  // The kept-alive connection closed under the GET: sent again once (debug), then it failed.
  expect(lines.map((l) => [l.msg, l.requestId, l.method, l.path])).toEqual([
    [
      'kept-alive cluster API connection closed under the request; sent again',
      'req-broken',
      'GET',
      '/broken/pods',
    ],
    ['cluster API request failed', 'req-broken', 'GET', '/broken/pods'],
  ]);
});
