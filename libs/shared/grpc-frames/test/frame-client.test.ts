import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { Metadata, Server, ServerCredentials, type ServerDuplexStream, status } from '@grpc/grpc-js';
import { dataFrame, decodeFrame, encodeFrame, type Frame, frame } from '@pullplane/proto';
import { createTestPki } from '@pullplane/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CallStatus,
  FrameClient,
  type FrameClientOptions,
  parseTarget,
  type TunnelCredentials,
  tunnelCredentials,
} from '../src/index.js';

const PATH = '/pullplane.test.Frames/Echo';
const pki = await createTestPki();
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function client(port: number, opts: Partial<FrameClientOptions> = {}): FrameClient {
  const c = new FrameClient({
    target: `127.0.0.1:${port}`,
    credentials: tunnelCredentials.insecure(),
    ...opts,
  });
  cleanups.push(() => c.destroy());
  return c;
}

/** Opens a call and collects what it receives until it ends. */
function open(c: FrameClient, md?: Metadata) {
  const frames: Frame[] = [];
  let endWith!: (s: CallStatus) => void;
  const ended = new Promise<CallStatus>((r) => {
    endWith = r;
  });
  const call = c.call(PATH, md, {
    onFrame: (f) => frames.push(f),
    onEnd: (s) => endWith(s),
  });
  return { call, frames, ended };
}

/** A raw HTTP/2 server whose every stream `handle` answers. */
async function rawServer(
  handle: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void,
) {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    // A client that gives up on a connection says so with an error code: not this server's error.
    s.on('error', () => undefined);
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    // A stream a client gave up on errors here: the test reads what the client saw.
    stream.on('error', () => undefined);
    handle(stream, headers);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    for (const s of sessions) s.destroy();
    return new Promise((r) => server.close(r));
  });
  return { port: (server.address() as AddressInfo).port, sessions };
}

const GRPC_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };

/** A grpc-js server (an independent gRPC implementation) serving PATH with `handler`; its port. */
async function grpcJsServer(handler: (call: ServerDuplexStream<Frame, Frame>) => void): Promise<number> {
  const server = new Server();
  server.register(PATH, handler, encodeFrame, decodeFrame, 'bidi');
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  cleanups.push(() => server.forceShutdown());
  return port;
}

/** A gRPC message of raw bytes. */
function message(body: Uint8Array, flag = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(body.byteLength, 1);
  return Buffer.concat([prefix, body]);
}

const ping = (n: number) => frame({ case: 'ping', value: { sentUnixMs: BigInt(n) } });

describe('against grpc-js, an independent gRPC implementation', () => {
  it('carries frames both ways as whole messages, metadata to the server, and the OK status after the last frame', async () => {
    let seenToken: unknown;
    const port = await grpcJsServer((call) => {
      seenToken = call.metadata.get('authorization')[0];
      let n = 0;
      call.on('data', (f: Frame) => {
        call.write(f);
        // A batch is one message of several frames: count the frames.
        n += f.kind.case === 'batch' ? f.kind.value.frames.length : 1;
        if (n === 3) call.end();
      });
    });
    const md = new Metadata();
    md.set('authorization', 'Bearer t0ken');
    const { call, frames, ended } = open(client(port), md);
    const big = new Uint8Array(300_000).fill(7);
    call.write(ping(1));
    call.write(dataFrame(2, big));
    call.sink.flush(); // two messages, then a third: batching must not merge what the test counts
    call.write(ping(3));
    expect(await ended).toEqual({ code: status.OK, details: 'OK' });
    expect(seenToken).toBe('Bearer t0ken');
    // grpc-js's server reads what arrives: a batch is one frame, so count the frames inside.
    const flat = frames.flatMap((f) => (f.kind.case === 'batch' ? f.kind.value.frames : [f]));
    expect(flat.map((f) => f.kind.case)).toEqual(['ping', 'data', 'ping']);
    const data = flat[1]!;
    expect(data.kind.case === 'data' && Buffer.from(data.kind.value.chunk).equals(Buffer.from(big))).toBe(
      true,
    );
  });

  it("reports grpc-js's refusal (a status in trailers-only headers) with its code and decoded message", async () => {
    const port = await grpcJsServer((call) =>
      call.emit('error', { code: status.PERMISSION_DENIED, details: 'agent “a” may not — 100%' }),
    );
    const { ended, frames } = open(client(port));
    expect(await ended).toEqual({ code: status.PERMISSION_DENIED, details: 'agent “a” may not — 100%' });
    expect(frames).toEqual([]);
  });
});

describe('responses that are not well-formed gRPC', () => {
  const cases: Array<[string, (s: http2.ServerHttp2Stream) => void, status, RegExp]> = [
    ['an HTTP 404', (s) => s.respond({ ':status': 404 }, { endStream: true }), status.UNIMPLEMENTED, /404/],
    ['an HTTP 503', (s) => s.respond({ ':status': 503 }, { endStream: true }), status.UNAVAILABLE, /503/],
    [
      'a 200 that is not gRPC',
      (s) => s.respond({ ':status': 200, 'content-type': 'text/html' }, { endStream: true }),
      status.UNKNOWN,
      /text\/html/,
    ],
    [
      'a message over the limit (refused from its prefix)',
      (s) => {
        s.respond(GRPC_HEADERS);
        const prefix = Buffer.alloc(5);
        prefix.writeUInt32BE(5 * 1024 * 1024, 1);
        s.write(prefix);
      },
      status.RESOURCE_EXHAUSTED,
      /larger than max/,
    ],
    [
      'a compressed message',
      (s) => {
        s.respond(GRPC_HEADERS);
        s.write(message(Buffer.from([1, 2, 3]), 1));
      },
      status.INTERNAL,
      /compressed/,
    ],
    [
      'bytes that are no Frame',
      (s) => {
        s.respond(GRPC_HEADERS);
        s.write(message(Buffer.from([0xff, 0xff, 0xff, 0xff])));
      },
      status.INTERNAL,
      /parse/,
    ],
    [
      'a response cut inside a message, then OK',
      (s) => {
        s.respond(GRPC_HEADERS, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
        s.end(message(encodeFrame(ping(1))).subarray(0, 7));
      },
      status.INTERNAL,
      /inside a message/,
    ],
    [
      'trailers without a status',
      (s) => {
        s.respond(GRPC_HEADERS, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'x-other': '1' }));
        s.end();
      },
      status.UNKNOWN,
      /no grpc-status/,
    ],
    [
      'a reset stream',
      (s) => s.close(http2.constants.NGHTTP2_INTERNAL_ERROR),
      status.UNAVAILABLE,
      /NGHTTP2_INTERNAL_ERROR/,
    ],
  ];
  for (const [name, answer, code, details] of cases)
    it(`ends the call with ${status[code]} on ${name}, and the server sees the stream closed`, async () => {
      let closed!: () => void;
      const serverClosed = new Promise<void>((r) => {
        closed = r;
      });
      const { port } = await rawServer((s) => {
        s.on('close', closed);
        s.on('error', () => undefined);
        answer(s);
      });
      const { ended, frames } = open(client(port));
      const end = await ended;
      expect(end.code).toBe(code);
      expect(end.details).toMatch(details);
      expect(frames).toEqual([]);
      await serverClosed;
    });

  it('delivers the frames before an error status, and the status after them', async () => {
    const { port } = await rawServer((s) => {
      s.respond(GRPC_HEADERS, { waitForTrailers: true });
      s.on('wantTrailers', () =>
        s.sendTrailers({ 'grpc-status': String(status.ABORTED), 'grpc-message': 'gone%20away' }),
      );
      s.end(Buffer.concat([message(encodeFrame(ping(1))), message(encodeFrame(ping(2)))]));
    });
    const { ended, frames } = open(client(port));
    expect(await ended).toEqual({ code: status.ABORTED, details: 'gone away' });
    expect(frames.map((f) => f.kind.case === 'ping' && Number(f.kind.value.sentUnixMs))).toEqual([1, 2]);
  });
});

describe('connections', () => {
  it('ends a call UNAVAILABLE, naming the cause, when nothing listens', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const end = await open(client(port)).ended;
    expect(end.code).toBe(status.UNAVAILABLE);
    expect(end.details).toMatch(/ECONNREFUSED/);
  });

  it('gives up on a connection not up within the connect timeout (a peer that never answers the TLS handshake)', async () => {
    // Reads what it is sent (the ClientHello) and answers nothing.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      sockets.add(socket.resume());
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((r) => silent.close(r));
    });
    const c = client((silent.address() as AddressInfo).port, {
      credentials: tunnelCredentials.tls(Buffer.from(pki.ca.certPem)),
      serverNameOverride: 'localhost',
      connectTimeoutMs: 300,
    });
    const end = await open(c).ended;
    expect(end.code).toBe(status.UNAVAILABLE);
    expect(end.details).toMatch(/no connection to 127\.0\.0\.1:\d+ within 300 ms/);
  });

  it("sends the call's metadata, and no metadata key replaces the headers that make it gRPC", async () => {
    let seen!: (h: http2.IncomingHttpHeaders) => void;
    const headers = new Promise<http2.IncomingHttpHeaders>((r) => {
      seen = r;
    });
    const { port } = await rawServer((s, h) => {
      seen(h);
      s.respond({ ...GRPC_HEADERS, 'grpc-status': '0' }, { endStream: true });
    });
    const md = new Metadata();
    md.set('authorization', 'Bearer t0ken');
    md.set('content-type', 'text/plain');
    md.set('te', 'gzip');
    md.set('user-agent', 'someone-else');
    expect((await open(client(port, { userAgent: 'pullplane-test' }), md).ended).code).toBe(status.OK);
    const h = await headers;
    expect({
      method: h[':method'],
      path: h[':path'],
      contentType: h['content-type'],
      te: h.te,
      userAgent: h['user-agent'],
      authorization: h.authorization,
    }).toEqual({
      method: 'POST',
      path: PATH,
      contentType: 'application/grpc',
      te: 'trailers',
      userAgent: 'pullplane-test',
      authorization: 'Bearer t0ken',
    });
  });

  it('a client destroyed between its handshake and the connect event is left alone (nothing thrown)', async () => {
    const { port } = await rawServer((s) => s.respond(GRPC_HEADERS));
    const c = client(port);
    const { ended } = open(c);
    const session = (c as unknown as { session: http2.ClientHttp2Session }).session;
    // Runs before the client's own 'connect' handler: the client is destroyed in between.
    session.prependOnceListener('connect', () => c.destroy());
    const end = await ended;
    expect(end.code).toBe(status.UNAVAILABLE);
    expect(session.destroyed).toBe(true);
  });

  it('cancel() resets the stream: the server sees it aborted, the call ends CANCELLED', async () => {
    let rst!: (code: number) => void;
    const serverSaw = new Promise<number>((r) => {
      rst = r;
    });
    const { port } = await rawServer((s) => {
      s.respond(GRPC_HEADERS);
      s.write(message(encodeFrame(ping(1))));
      s.on('close', () => rst(s.rstCode));
    });
    const { call, frames, ended } = open(client(port));
    await expect.poll(() => frames.length).toBe(1);
    call.cancel();
    expect(await ended).toEqual({ code: status.CANCELLED, details: 'Cancelled on client' });
    expect(await serverSaw).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it('end() half-closes after what is queued: the server reads every frame, then the end', async () => {
    let got!: (frames: number) => void;
    const serverGot = new Promise<number>((r) => {
      got = r;
    });
    const { port } = await rawServer((s) => {
      s.respond(GRPC_HEADERS, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('end', () => {
        got(Buffer.concat(chunks).length);
        s.end();
      });
    });
    const { call, ended } = open(client(port));
    call.write(ping(1));
    call.end();
    expect(await ended).toEqual({ code: status.OK, details: '' });
    expect(await serverGot).toBe(message(encodeFrame(ping(1))).length);
  });

  it('after a GOAWAY, a call open on the old connection goes on while a new call dials a new one', async () => {
    const { port, sessions } = await rawServer((s) => {
      s.respond(GRPC_HEADERS);
      s.on('data', (c: Buffer) => s.write(c)); // echo
    });
    const c = client(port);
    const first = open(c);
    first.call.write(ping(1));
    await expect.poll(() => first.frames.length).toBe(1);
    const [old] = [...sessions];
    old!.goaway(http2.constants.NGHTTP2_NO_ERROR);
    // The GOAWAY is in once a PING sent after it is answered.
    await new Promise<void>((resolve, reject) => old!.ping((err) => (err ? reject(err) : resolve())));
    await expect.poll(() => (c as unknown as { session?: http2.ClientHttp2Session }).session).toBeUndefined();
    const second = open(c);
    second.call.write(ping(2));
    await expect.poll(() => second.frames.length).toBe(1);
    expect(sessions.size).toBe(2);
    first.call.write(ping(3));
    await expect.poll(() => first.frames.length).toBe(2);
  });

  it('closes a connection whose PINGs go unanswered, failing its calls UNAVAILABLE', async () => {
    let pings = 0;
    const { port } = await rawServer((s) => {
      s.session?.on('ping', () => pings++);
      s.respond(GRPC_HEADERS);
    });
    // A TCP relay that can stop passing the server's bytes: a peer gone silent, TCP still up.
    let silent = false;
    const relay = net.createServer((down) => {
      const up = net.connect(port, '127.0.0.1');
      down.pipe(up);
      up.on('data', (b) => {
        if (!silent) down.write(b);
      });
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => relay.close(r)));
    const c = client((relay.address() as AddressInfo).port, {
      keepAliveIntervalMs: 100,
      keepAliveTimeoutMs: 200,
    });
    let endedYet = false;
    const { ended } = open(c);
    void ended.then(() => {
      endedYet = true;
    });
    // Three PINGs answered, the call still open: answers keep the connection.
    await expect.poll(() => pings, { timeout: 5_000 }).toBeGreaterThanOrEqual(3);
    expect(endedYet).toBe(false);
    silent = true;
    const end = await ended;
    expect(end.code).toBe(status.UNAVAILABLE);
    expect(end.details).toMatch(/no PING answer/);
  });
});

describe('TLS', () => {
  async function tlsServer() {
    const pair = await pki.serverCert();
    const server = http2.createSecureServer({ cert: pair.certPem, key: pair.keyPem });
    let dials = 0;
    server.on('secureConnection', () => dials++);
    server.on('session', (s) => s.on('error', () => undefined));
    server.on('stream', (s) => s.respond({ ...GRPC_HEADERS, 'grpc-status': '0' }, { endStream: true }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => server.close(r)));
    return { port: (server.address() as AddressInfo).port, dials: () => dials };
  }

  it("verifies the server's certificate against the name given, and refuses one it cannot verify", async () => {
    const { port } = await tlsServer();
    const trusted = tunnelCredentials.tls(Buffer.from(pki.ca.certPem));
    expect(
      (await open(client(port, { credentials: trusted, serverNameOverride: 'localhost' })).ended).code,
    ).toBe(status.OK);
    const wrongName = await open(
      client(port, { credentials: trusted, serverNameOverride: 'elsewhere.example' }),
    ).ended;
    expect(wrongName.code).toBe(status.UNAVAILABLE);
    expect(wrongName.details).toMatch(/altnames|elsewhere/);
    const otherCa = await createTestPki();
    const untrusted = await open(
      client(port, {
        credentials: tunnelCredentials.tls(Buffer.from(otherCa.ca.certPem)),
        serverNameOverride: 'localhost',
      }),
    ).ended;
    expect(untrusted.code).toBe(status.UNAVAILABLE);
    expect(untrusted.details).toMatch(/certificate/);
  });

  it("accepts a server it cannot verify only when told not to verify (the agent's --insecure-tls)", async () => {
    const { port } = await tlsServer();
    const otherCa = await createTestPki();
    const context = createSecureContext({ ca: otherCa.ca.certPem });
    const verifying = tunnelCredentials.fromSecureContext(context);
    const unverified = tunnelCredentials.fromSecureContext(context, { rejectUnauthorized: false });
    expect(
      (await open(client(port, { credentials: verifying, serverNameOverride: 'localhost' })).ended).code,
    ).toBe(status.UNAVAILABLE);
    expect(
      (await open(client(port, { credentials: unverified, serverNameOverride: 'localhost' })).ended).code,
    ).toBe(status.OK);
  });

  it('asks its credentials once per connection dialled, not per call', async () => {
    const { port, dials } = await tlsServer();
    let asked = 0;
    const base = tunnelCredentials.tls(Buffer.from(pki.ca.certPem));
    const counting: TunnelCredentials = {
      secure: true,
      forConnection: () => {
        asked++;
        return base.forConnection();
      },
    };
    const c = client(port, { credentials: counting, serverNameOverride: 'localhost' });
    expect((await open(c).ended).code).toBe(status.OK);
    expect((await open(c).ended).code).toBe(status.OK);
    expect({ asked, dials: dials() }).toEqual({ asked: 1, dials: 1 });
    c.close();
    const again = client(port, { credentials: counting, serverNameOverride: 'localhost' });
    expect((await open(again).ended).code).toBe(status.OK);
    expect({ asked, dials: dials() }).toEqual({ asked: 2, dials: 2 });
  });
});

describe('targets', () => {
  it('reads host:port, [v6]:port and dns: forms, and refuses anything else', () => {
    expect(parseTarget('gw.example:8443')).toEqual({ host: 'gw.example', port: 8443 });
    expect(parseTarget('10.0.0.7:443')).toEqual({ host: '10.0.0.7', port: 443 });
    expect(parseTarget('[fd00::7]:443')).toEqual({ host: 'fd00::7', port: 443 });
    expect(parseTarget('dns:///gw.example:443')).toEqual({ host: 'gw.example', port: 443 });
    expect(parseTarget('dns:gw.example:443')).toEqual({ host: 'gw.example', port: 443 });
    for (const bad of ['gw.example', 'gw.example:0', 'gw.example:70000', 'unix:/tmp/s', 'fd00::7:443', ''])
      expect(() => parseTarget(bad), bad).toThrow(/not host:port/);
  });
});
