import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../src/index.js';
import {
  encodeDataFrame,
  encodePing,
  encodeSynStream,
  RstStatus,
  SpdyFrameParser,
} from '../src/kube/streams/spdy-frames.js';
import { encodeHeaderBlock, HeaderCompressor } from '../src/kube/streams/spdy-header-codec.js';
import { eventually } from './kube-helpers.js';
import { openSpdy, readToEnd, runningPod, spdy, spdyExecStreams } from './support/stream-clients.js';

/**
 * SPDY/3.1 as client-go's executor and port-forwarder speak it (what Argo CD and other Go
 * clients may use), with a client built on the stand-in's own session code in the client role.
 */
let server: FakeKubeApiServer;
const EXEC = '/api/v1/namespaces/go/pods/box/exec';
const PF = '/api/v1/namespaces/go/pods/box/portforward';
const CLIENT_GO_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
];

beforeAll(async () => {
  server = await startFakeKubeApiServer({ streamCreationTimeoutMs: 300 });
  server.store.put(runningPod('go', 'box'));
});
afterAll(() => server.close());

describe('exec over SPDY/3.1', () => {
  it('negotiates v4 from client-go’s list; stdin, stdout, stderr and the JSON status', async () => {
    const { session, protocol } = await spdy(
      server,
      `${EXEC}?command=sh&command=-c&command=cat%3B+echo+e+>%262%3B+exit+5&stdin=true&stdout=true&stderr=true`,
      CLIENT_GO_PROTOCOLS,
    );
    expect(protocol).toBe('v4.channel.k8s.io');
    const s = await spdyExecStreams(session, ['error', 'stdin', 'stdout', 'stderr']);
    s.get('stdin')!.end('piped in\n');
    const [status, out, err] = await Promise.all([
      readToEnd(s.get('error')!),
      readToEnd(s.get('stdout')!),
      readToEnd(s.get('stderr')!),
    ]);
    expect(out.toString()).toBe('piped in\n');
    expect(err.toString()).toBe('e\n');
    expect(JSON.parse(status.toString())).toEqual({
      metadata: {},
      status: 'Failure',
      message:
        'command terminated with non-zero exit code: error executing command [sh -c cat; echo e >&2; exit 5], exit code 5',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '5' }] },
    });
    session.end();
    await session.closed;
    await eventually(() => expect(server.streamSessions().at(-1)?.endedAt).toBeDefined());
  });

  it('a TTY with resizes on their own stream (v3+); no stderr stream with a TTY', async () => {
    const { session } = await spdy(server, `${EXEC}?command=sh&stdin=true&stdout=true&stderr=true&tty=true`, [
      'v4.channel.k8s.io',
    ]);
    const s = await spdyExecStreams(session, ['error', 'stdin', 'stdout', 'resize']);
    s.get('resize')!.write('{"Width":100,"Height":33}\n');
    let shown = '';
    s.get('stdout')!.on('data', (c: Buffer) => {
      shown += c.toString();
    });
    s.get('stdin')!.write('stty size\r');
    await eventually(() => expect(shown).toContain('33 100\r\n'));
    s.get('stdin')!.write('exit\r');
    expect((await readToEnd(s.get('error')!)).toString()).toBe('{"metadata":{},"status":"Success"}');
    expect(server.streamSessions().at(-1)?.resizes).toEqual([{ width: 100, height: 33 }]);
    session.destroy();
  });

  it('v2 carries failures as plain text on the error stream', async () => {
    const { session, protocol } = await spdy(server, `${EXEC}?command=false&stdout=1`, ['v2.channel.k8s.io']);
    expect(protocol).toBe('v2.channel.k8s.io');
    const s = await spdyExecStreams(session, ['error', 'stdout']);
    expect((await readToEnd(s.get('error')!)).toString()).toBe(
      'command terminated with non-zero exit code: error executing command [false], exit code 1',
    );
    session.destroy();
  });

  it('a client that never opens the streams it announced is hung up on after the creation timeout', async () => {
    const { session } = await spdy(server, `${EXEC}?command=cat&stdin=1&stdout=1`, ['v4.channel.k8s.io']);
    await spdyExecStreams(session, ['error', 'stdout']);
    const goaway = new Promise<number>((resolve) => session.once('goaway', resolve));
    expect(await goaway).toBe(0);
    await session.closed;
  });

  it('a missing pod is the API server’s 404 Status, before any handshake', async () => {
    const r = await openSpdy(server, '/api/v1/namespaces/go/pods/ghost/exec?command=ls&stdout=1', [
      'v4.channel.k8s.io',
    ]);
    expect(r).toMatchObject({ status: 404 });
    expect(JSON.parse((r as { body: string }).body)).toMatchObject({
      reason: 'NotFound',
      message: 'pods "ghost" not found',
    });
  });

  it('handshake refusals: no protocol header is 400, no common protocol is 403 listing the server’s', async () => {
    expect(await openSpdy(server, `${EXEC}?command=true&stdout=1`, [])).toMatchObject({
      status: 400,
      body: 'unable to upgrade: header X-Stream-Protocol-Version does not exist in request\n',
    });
    const refused = await openSpdy(server, `${EXEC}?command=true&stdout=1`, ['v9.channel.k8s.io']);
    expect(refused).toMatchObject({
      status: 403,
      body: 'unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n',
    });
    expect(
      (refused as { headers: Record<string, unknown> }).headers['x-accepted-stream-protocol-versions'],
    ).toBe('v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io');
  });

  it('answers PINGs, ignores data for unknown streams, and hangs up on a broken frame with GOAWAY', async () => {
    const { session, socket } = await spdy(server, `${EXEC}?command=cat&stdin=1&stdout=1`, [
      'v4.channel.k8s.io',
    ]);
    await session.ping();
    socket.write(encodeDataFrame(999, Buffer.from('stray'), false));
    const s = await spdyExecStreams(session, ['error', 'stdin', 'stdout']);
    s.get('stdin')!.write('still fine\n');
    await eventually(() => expect(s.get('stdout')!.readableLength).toBeGreaterThan(0));
    const goaway = new Promise<number>((resolve) => session.once('goaway', resolve));
    // A PING with flags is a protocol error: the connection cannot continue.
    socket.write(Buffer.from([0x80, 0x03, 0x00, 0x06, 0x01, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x03]));
    expect(await goaway).toBe(1);
    await session.closed;
  });
});

describe('port-forward over SPDY/3.1', () => {
  async function forward(
    session: Awaited<ReturnType<typeof spdy>>['session'],
    port: number,
    requestId: string | undefined,
    request: string,
  ) {
    const headers = (type: string) => ({
      streamtype: type,
      port: String(port),
      ...(requestId ? { requestid: requestId } : {}),
    });
    const error = session.openStream(headers('error'));
    const data = session.openStream(headers('data'));
    await Promise.all([error.whenReplied(), data.whenReplied()]);
    error.end();
    data.end(request);
    const [errText, body] = await Promise.all([readToEnd(error), readToEnd(data)]);
    return { error: errText.toString(), body: body.toString() };
  }

  it('pairs streams by requestID, many connections at once, refused ports reported per connection', async () => {
    const { session, protocol } = await spdy(server, PF, ['portforward.k8s.io']);
    expect(protocol).toBe('portforward.k8s.io');
    const get = 'GET / HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n';
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => forward(session, 8080, String(i), get)),
      forward(session, 7777, '100', get),
    ]);
    for (const r of results.slice(0, 8)) {
      expect(r.error).toBe('');
      expect(r.body).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nHello from box in go \(port 8080\)\n$/);
    }
    expect(results[8]!.error).toMatch(
      /^error forwarding port 7777 to pod [0-9a-f]{64}, uid : .*connect: connection refused/,
    );
    expect(results[8]!.body).toBe('');
    session.destroy();
  });

  it('clients without requestID: a data stream pairs with the error stream two ids before it', async () => {
    const { session } = await spdy(server, PF, ['portforward.k8s.io']);
    const r = await forward(
      session,
      8080,
      undefined,
      'GET /healthz HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n',
    );
    expect(r.body).toMatch(/\r\n\r\nok\n$/);
    session.destroy();
  });

  it('a lone stream times out with a message on its error stream; a client RST closes the connection', async () => {
    const { session } = await spdy(server, PF, ['portforward.k8s.io']);
    const error = session.openStream({ streamtype: 'error', port: '8080', requestid: '7' });
    await error.whenReplied();
    error.end();
    expect((await readToEnd(error)).toString()).toMatch(
      /\(conn=\d+, request=7\) timed out waiting for streams/,
    );
    const e2 = session.openStream({ streamtype: 'error', port: '8080', requestid: '8' });
    const d2 = session.openStream({ streamtype: 'data', port: '8080', requestid: '8' });
    await Promise.all([e2.whenReplied(), d2.whenReplied()]);
    d2.write('GET /bytes/1073741824 HTTP/1.1\r\nHost: pod\r\n\r\n');
    await new Promise((resolve) => d2.once('data', resolve));
    d2.reset(RstStatus.Cancel);
    expect((await readToEnd(e2)).toString()).toBe('');
    session.destroy();
  });
});

it('SPDY framing is checked on the real wire: a raw client sees SYN_REPLY and FIN as Go expects', async () => {
  // A hand-rolled peer, independent of the session code: upgrade, then read frames raw.
  const socket = connect(server.port, server.host);
  socket.write(
    `POST ${EXEC}?command=echo&command=raw&stdout=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n`,
  );
  const frames: string[] = [];
  let head = '';
  const parser = new SpdyFrameParser((f) => {
    frames.push(
      f.type === 'data'
        ? `data ${f.streamId} ${f.data.toString()}${f.fin ? ' FIN' : ''}`
        : `${f.type} ${'streamId' in f ? f.streamId : ''}`,
    );
  });
  socket.on('data', (c: Buffer) => {
    if (!head.includes('\r\n\r\n')) {
      head += c.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end >= 0) parser.push(Buffer.from(head.slice(end + 4), 'latin1'));
      return;
    }
    parser.push(c);
  });
  await eventually(() => expect(head).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/));
  expect(head).toContain('X-Stream-Protocol-Version: v4.channel.k8s.io');
  const compressor = new HeaderCompressor();
  socket.write(encodeSynStream(1, compressor.compress(encodeHeaderBlock({ streamtype: 'error' }))));
  socket.write(encodeSynStream(3, compressor.compress(encodeHeaderBlock({ streamtype: 'stdout' }))));
  socket.write(encodePing(5));
  // Data, then an empty frame carrying FIN: how spdystream half-closes after a write, too.
  await eventually(() => expect(frames).toContain('data 1  FIN'));
  expect(frames).toEqual(
    expect.arrayContaining([
      'syn_reply 1',
      'syn_reply 3',
      'ping ',
      'data 3 raw\n',
      'data 3  FIN',
      'data 1 {"metadata":{},"status":"Success"}',
    ]),
  );
  expect(frames.indexOf('data 3  FIN')).toBeLessThan(
    frames.indexOf('data 1 {"metadata":{},"status":"Success"}'),
  );
  socket.destroy();
});
