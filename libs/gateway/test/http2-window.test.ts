import http2 from 'node:http2';
import { Server } from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { HTTP2_WINDOW, startGrpcListener } from '../src/grpc-listener.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

it('raises the connection window of each session it accepts, not only the per-stream window', async () => {
  const listener = await startGrpcListener(new Server(), {
    name: 'test',
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
  });
  cleanups.push(() => listener.close(0));
  const client = http2.connect(`http://127.0.0.1:${listener.port}`);
  cleanups.push(() => client.destroy());
  await new Promise((r) => client.once('remoteSettings', r));
  // The server's WINDOW_UPDATE leaves before its PING ack: once the ack is in, it has arrived.
  await new Promise<void>((resolve, reject) => client.ping((err) => (err ? reject(err) : resolve())));
  expect(client.remoteSettings.initialWindowSize).toBe(HTTP2_WINDOW);
  // What this client may send on the connection before waiting for a WINDOW_UPDATE.
  expect(client.state.remoteWindowSize).toBe(HTTP2_WINDOW);
});
