import { randomBytes } from 'node:crypto';
import net, { type AddressInfo, type Server, type Socket } from 'node:net';
import tls from 'node:tls';
import { createTestPki, type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type ReadPath, readAccepted } from '../src/index.js';

interface Accepted {
  socket: Socket;
  path: ReadPath;
  discard: () => void;
  chunks: Buffer[];
  /** 'data' events seen: none when the chunks came through the shared buffer. */
  dataEvents: () => number;
  ended: Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server whose every connection reads through readAccepted; `accepted()` yields them in order. */
function serve(make: (onSocket: (s: Socket) => void) => Server = (f) => net.createServer(f)) {
  const queue: Accepted[] = [];
  const waiting: Array<(a: Accepted) => void> = [];
  const server = make((socket) => {
    const chunks: Buffer[] = [];
    const reads = readAccepted(socket, (c) => chunks.push(c));
    let events = 0;
    socket.on('data', () => events++);
    const ended = new Promise<void>((r) => socket.once('end', () => r()));
    const a = { socket, path: reads.path, discard: reads.discard, chunks, dataEvents: () => events, ended };
    const w = waiting.shift();
    if (w) w(a);
    else queue.push(a);
  });
  servers.push(server);
  const listening = new Promise<number>((r) =>
    server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)),
  );
  const accepted = () =>
    new Promise<Accepted>((r) => {
      const a = queue.shift();
      if (a) r(a);
      else waiting.push(r);
    });
  return { listening, accepted };
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes `data` in pieces of random sizes (1 B to 20 KiB), then ends. */
async function writeInPieces(s: Socket, data: Buffer): Promise<void> {
  for (let at = 0; at < data.length; ) {
    const n = Math.min(data.length - at, 1 + Math.floor(Math.random() * 20_000));
    if (!s.write(data.subarray(at, at + n))) await new Promise((r) => s.once('drain', r));
    at += n;
  }
  s.end();
}

describe('readAccepted (plain TCP)', () => {
  it('reads through the shared buffer, and every chunk keeps its bytes after later reads (two sockets at once)', async () => {
    const { listening, accepted } = serve();
    const port = await listening;
    const [c1, c2] = await Promise.all([connect(port), connect(port)]);
    const [a1, a2] = [await accepted(), await accepted()];
    expect(a1.path).toBe('shared-buffer');
    expect(a2.path).toBe('shared-buffer');
    const d1 = randomBytes(2 * 1024 * 1024);
    const d2 = randomBytes(2 * 1024 * 1024);
    await Promise.all([writeInPieces(c1, d1), writeInPieces(c2, d2), a1.ended, a2.ended]);
    // Chunks are copies: had one kept a view of the shared buffer, later reads would have overwritten it.
    expect(a1.chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(a1.chunks).equals(d1)).toBe(true);
    expect(Buffer.concat(a2.chunks).equals(d2)).toBe(true);
    expect(a1.dataEvents() + a2.dataEvents()).toBe(0);
  });

  it('pause stops reads until resume (proved by a second connection read meanwhile)', async () => {
    const { listening, accepted } = serve();
    const port = await listening;
    const c1 = await connect(port);
    const a1 = await accepted();
    a1.socket.pause();
    await new Promise<void>((r) => c1.write('held', () => r()));
    // On loopback the bytes are in a1's receive queue once the write completed; a second
    // connection read after that shows a1's socket would have been read too, had it been reading.
    const c2 = await connect(port);
    const a2 = await accepted();
    c2.write('later');
    await new Promise<void>((r) => {
      const check = () => (a2.chunks.length > 0 ? r() : setImmediate(check));
      check();
    });
    await new Promise((r) => setImmediate(r));
    expect(a2.chunks.map(String)).toEqual(['later']);
    expect(a1.chunks).toEqual([]);
    a1.socket.resume();
    c1.end();
    await a1.ended;
    expect(Buffer.concat(a1.chunks).toString()).toBe('held');
    c2.destroy();
  });

  it("a peer's end emits 'end', and closing emits 'close'", async () => {
    const { listening, accepted } = serve();
    const c = await connect(await listening);
    const a = await accepted();
    c.end('last');
    await a.ended;
    expect(Buffer.concat(a.chunks).toString()).toBe('last');
    const closed = new Promise<void>((r) => a.socket.once('close', () => r()));
    a.socket.end();
    await closed;
  });
});

describe('readAccepted: discard', () => {
  it("drops what comes after discard, and the peer's end still arrives", async () => {
    const { listening, accepted } = serve();
    const c = await connect(await listening);
    const a = await accepted();
    await new Promise<void>((r) => c.write('kept', () => r()));
    await new Promise<void>((r) => {
      const check = () => (a.chunks.length > 0 ? r() : setImmediate(check));
      check();
    });
    a.discard();
    await writeInPieces(c, randomBytes(1024 * 1024));
    await a.ended;
    expect(Buffer.concat(a.chunks).toString()).toBe('kept');
    expect(a.dataEvents()).toBe(0);
  });
});

describe('readAccepted (TLS)', () => {
  it("reads a TLS socket with 'data' events, whole", async () => {
    const pki = await createTestPki();
    const server = await pki.serverCert();
    const { listening, accepted } = serve((f) =>
      tls.createServer({ cert: server.certPem, key: server.keyPem }, f),
    );
    const port = await listening;
    const c = tls.connect({ port, host: '127.0.0.1', ca: pki.ca.certPem, servername: 'localhost' });
    await new Promise((r) => c.once('secureConnect', r));
    const a = await accepted();
    expect(a.path).toBe('data-events');
    const data = randomBytes(300_000);
    await Promise.all([writeInPieces(c, data), a.ended]);
    expect(Buffer.concat(a.chunks).equals(data)).toBe(true);
    expect(a.dataEvents()).toBe(a.chunks.length);
  });
});

describe('connectRedis', () => {
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer();
  }, 30_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it('hands every chunk to the handler, with no data events (TCP reads into the shared buffer)', async () => {
    const chunks: Buffer[] = [];
    let got: () => void = () => undefined;
    const socket = connectRedis({ host: redis.host, port: redis.port }, (c) => {
      chunks.push(c);
      got();
    });
    // A 1 MiB value arrives over many reads; every one is kept whole.
    const value = randomBytes(1024 * 1024)
      .toString('hex')
      .slice(0, 1024 * 1024);
    socket.write(
      `*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$${value.length}\r\n${value}\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`,
    );
    const expected = `+OK\r\n$${value.length}\r\n${value}\r\n`;
    await new Promise<void>((r) => {
      got = () => {
        if (Buffer.concat(chunks).length >= expected.length) r();
      };
    });
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).toString()).toBe(expected);
    expect(socket.listenerCount('data')).toBe(0);
    socket.destroy();
  });
});
