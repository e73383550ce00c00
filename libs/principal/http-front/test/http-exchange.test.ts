import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryLink, type LogicalStream, Multiplexer } from '@pullplane/tunnel';
import { afterAll, expect, it } from 'vitest';
import { bindHttpExchange } from '../src/index.js';

// A real HTTP server whose handler opens a stream over a real multiplexer pair; the agent side
// records what the stream brought and how it ended.
const link = createMemoryLink();
const gateway = new Multiplexer({ sink: link.a, idParity: 'odd' });
const arrived: Array<Promise<{ body: string; error?: string }>> = [];
const agent = new Multiplexer({
  sink: link.b,
  idParity: 'even',
  onStream: (s: LogicalStream) => {
    arrived.push(
      new Promise((resolve) => {
        let body = '';
        s.on('data', (c: Buffer) => {
          body += c.toString();
        });
        s.on('end', () => {
          s.respond(200);
          s.end();
          resolve({ body });
        });
        s.on('error', (err) => resolve({ body, error: err.message }));
      }),
    );
  },
});
link.connect(
  (f) => gateway.receive(f),
  (f) => agent.receive(f),
);

const LIMIT = 1000;
let counted = 0;
let tooLarge = 0;
const server = http.createServer((req, res) => {
  const stream = gateway.open({
    head: { case: 'http', value: { method: 'POST', path: '/', headers: [] } },
    hasBody: true,
  });
  bindHttpExchange(req, res, stream, {
    hasBody: true,
    maxBodyBytes: LIMIT,
    onBody: (n) => {
      counted += n;
    },
    onTooLarge: () => {
      tooLarge++;
      res.writeHead(413).end();
    },
  });
  stream.responseHead().then(
    (h) => res.writeHead(h.status).end(),
    () => undefined,
  );
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
afterAll(() => server.close());
const port = (server.address() as AddressInfo).port;

/**
 * POSTs a chunked body (no length to check up front), chunk by chunk; `between` runs after the
 * first chunk is written and before the rest.
 */
function post(chunks: string[], between?: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.write(chunks[0]);
    void (async () => {
      await between?.();
      for (const c of chunks.slice(1)) req.write(c);
      req.end();
    })();
  });
}

it('passes a chunked body under the cap to the stream, counting it', async () => {
  counted = 0;
  expect(await post(['a'.repeat(400), 'b'.repeat(400)])).toBe(200);
  expect(await arrived.at(-1)).toEqual({ body: `${'a'.repeat(400)}${'b'.repeat(400)}` });
  expect(counted).toBe(800);
});

it('resets the stream and answers once when a chunked body passes the cap', async () => {
  tooLarge = 0;
  const before = arrived.length;
  // The rest follows once the agent holds the stream, so it sees the reset (sent in the same
  // turn as the Open, the stream would never leave the proxy at all).
  const status = await post(['x'.repeat(600), 'y'.repeat(600), 'z'.repeat(600)], () =>
    expect.poll(() => arrived.length).toBe(before + 1),
  );
  expect(status).toBe(413);
  expect(tooLarge).toBe(1);
  expect((await arrived.at(-1))?.error).toMatch(/request body over the limit/);
});
