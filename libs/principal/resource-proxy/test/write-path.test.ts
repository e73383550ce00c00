import net from 'node:net';
import { type HeaderAuthMethod, parseAuthMethod } from '@pullplane/auth';
import { openInitOf } from '@pullplane/router';
import { createMemoryLink, type LogicalStream, Multiplexer } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { createResourceProxy } from '../src/index.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const POD = JSON.stringify({ kind: 'Pod', metadata: { name: 'p', namespace: 'default' } });

/** A resource proxy whose agent answers every request with POD (head, body and end together). */
async function startProxy(answer: (s: LogicalStream) => void) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream: answer });
  link.connect(
    (m) => gateway.receive(m),
    (m) => agent.receive(m),
  );
  cleanups.push(() => link.close());
  const proxy = createResourceProxy({
    router: { open: (name, init) => gateway.open(openInitOf(init, name)) },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    host: '127.0.0.1',
    port: 0,
    auth: {
      meshIdentity: {
        method: parseAuthMethod('header:x-caller:^([a-z]+)$') as HeaderAuthMethod,
        allowed: ['argocd'],
      },
    },
    requestTimeoutMs: 10_000,
    maxRequestBodyBytes: 1024 * 1024,
  });
  await proxy.listen();
  cleanups.push(() => proxy.close(0));
  return proxy;
}

/** Counts the writes the proxy's side of each connection makes to its socket (writev counts once). */
function countServerWrites(port: number) {
  const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
  const original = { _write: proto._write, _writev: proto._writev };
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const impl = original[name];
    proto[name] = function (this: net.Socket, ...args: unknown[]) {
      if (this.localPort === port) writes++;
      return impl.apply(this, args);
    };
  }
  cleanups.push(() => Object.assign(proto, original));
  return () => writes;
}

/** One GET on a raw connection; resolves with everything received once the response is complete. */
function rawGet(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(got)?.[1];
      const complete =
        length === undefined ? got.endsWith('\r\n0\r\n\r\n') : got.length >= end + 4 + Number(length);
      if (end >= 0 && complete) {
        socket.destroy();
        resolve(got);
      }
    });
    socket.on('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nhost: proxy\r\nx-caller: argocd\r\n\r\n`);
  });
}

it.each([
  ['a length', true],
  ['no length (chunked)', false],
])(
  'writes a small response with %s that arrived with its head, body and end in one socket write',
  async (_, withLength) => {
    const proxy = await startProxy((s) => {
      s.respond(200, [
        { name: 'content-type', value: 'application/json' },
        ...(withLength ? [{ name: 'content-length', value: String(Buffer.byteLength(POD)) }] : []),
      ]);
      s.end(POD);
    });
    const writes = countServerWrites(proxy.port);
    const response = await rawGet(proxy.port, '/clusters/agent-a/api/v1/namespaces/default/pods/p');
    expect(response.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(response).toContain(POD);
    console.log('WRITES', withLength, writes(), JSON.stringify(response));
    expect(writes()).toBe(1);
  },
);

/**
 * Sends `requests` pipelined on one connection and resolves with every byte received once the
 * last response (a GET of /ok, answered "ok" with a length) is in, or the connection closed.
 */
function pipelined(port: number, requests: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      socket.destroy();
      resolve(got);
    };
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.endsWith('\r\n\r\nok')) done();
    });
    socket.on('close', done);
    socket.on('error', reject);
    socket.write(requests.map((r) => `${r} HTTP/1.1\r\nhost: proxy\r\nx-caller: argocd\r\n\r\n`).join(''));
  });
}

const FORGED = 'HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nFORGED';

describe('agent responses whose framing cannot be taken as it is', () => {
  const answers: Record<string, (s: LogicalStream) => void> = {
    '/api/head': (s) => {
      s.respond(200, [{ name: 'content-length', value: '5' }]);
      s.end(`hello${FORGED}`);
    },
    '/api/no-content': (s) => {
      s.respond(204, [{ name: 'content-length', value: '5' }]);
      s.end(`hello${FORGED}`);
    },
    '/api/two-lengths': (s) => {
      s.respond(200, [
        { name: 'content-length', value: '5' },
        { name: 'content-length', value: '11' },
      ]);
      s.end(`hello${FORGED}`);
    },
    '/api/not-a-number': (s) => {
      s.respond(200, [{ name: 'content-length', value: '5x' }]);
      s.end(`hello${FORGED}`);
    },
    '/api/ok': (s) => {
      s.respond(200, [{ name: 'content-length', value: '2' }]);
      s.end('ok');
    },
  };
  const answer = (s: LogicalStream) => {
    const head = s.open.head;
    const path = head.case === 'http' ? head.value.path : '';
    s.resume();
    const a = answers[path];
    if (a) a(s);
    else s.respond(404);
  };

  it('gives HEAD and 204 no body: the next response on the connection is the real next one', async () => {
    const proxy = await startProxy(answer);
    const got = await pipelined(proxy.port, [
      'HEAD /clusters/agent-a/api/head',
      'GET /clusters/agent-a/api/no-content',
      'GET /clusters/agent-a/api/ok',
    ]);
    const responses = got.split(/(?=HTTP\/1\.1 )/);
    expect(responses.map((r) => r.split('\r\n')[0])).toEqual([
      'HTTP/1.1 200 OK',
      'HTTP/1.1 204 No Content',
      'HTTP/1.1 200 OK',
    ]);
    // HEAD keeps the length of the body it would have had; a 204 has none.
    expect(responses[0]).toMatch(/\r\ncontent-length: 5\r\n[\s\S]*\r\n\r\n$/i);
    expect(responses[1]).not.toMatch(/content-length/i);
    expect(responses[1]).toMatch(/\r\n\r\n$/);
    expect(responses[2]).toMatch(/\r\n\r\nok$/);
    expect(got).not.toContain('FORGED');
    expect(got).not.toContain('hello');
  });

  it.each(['/api/two-lengths', '/api/not-a-number'])(
    'drops a Content-Length that is not one number (%s) and sends the body chunked, as one body',
    async (path) => {
      const proxy = await startProxy(answer);
      const got = await pipelined(proxy.port, [
        `GET /clusters/agent-a${path}`,
        'GET /clusters/agent-a/api/ok',
      ]);
      // The first response is whole at its last chunk; what follows is the next response.
      const end = got.indexOf('\r\n0\r\n\r\n') + 7;
      const [first, second] = [got.slice(0, end), got.slice(end)];
      const head = first.slice(0, first.indexOf('\r\n\r\n'));
      expect(head).not.toMatch(/content-length/i);
      expect(head).toMatch(/transfer-encoding: chunked$/im);
      // The forged response is inside the chunked body, never a response of its own.
      expect(first).toContain(`\r\n${(5 + FORGED.length).toString(16)}\r\nhello${FORGED}\r\n0\r\n\r\n`);
      expect(second.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
      expect(second).not.toContain('FORGED');
      expect(second).toMatch(/\r\n\r\nok$/);
    },
  );
});
