import net from 'node:net';
import { type HeaderAuthMethod, parseAuthMethod } from '@pullplane/auth';
import { createMemoryLink, type LogicalStream, Multiplexer } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, expect, it } from 'vitest';
import { createResourceProxy } from '../src/index.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const POD = JSON.stringify({ kind: 'Pod', metadata: { name: 'p', namespace: 'default' } });

/** A resource proxy whose agent answers every request with POD (head, body and end together). */
async function startProxy(answer: (s: LogicalStream) => void) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, role: 'gateway' });
  const agent = new Multiplexer({ sink: link.b, role: 'agent', onStream: answer });
  link.connect(
    (m) => gateway.receive(m),
    (m) => agent.receive(m),
  );
  cleanups.push(() => link.close());
  const proxy = createResourceProxy({
    router: { open: (name, { routeDeadline: _, ...init }) => gateway.open({ ...init, agent: name }) },
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
