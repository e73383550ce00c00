import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../src/index.js';
import { eventually } from './kube-helpers.js';
import { type ChannelClient, channels, openChannels, runningPod } from './support/stream-clients.js';

/**
 * The WebSocket side of exec, attach and port-forward driven by a client of our own, for what
 * kubectl cannot show without a terminal: TTY and resize, the v5 close signal, older channel
 * protocols, back-pressure, and a stand-in for Argo CD's web terminal.
 */
let server: FakeKubeApiServer;
const exec = (query: string) => `/api/v1/namespaces/term/pods/box/exec?${query}`;
const V5 = ['v5.channel.k8s.io'];

beforeAll(async () => {
  server = await startFakeKubeApiServer({ gitVersion: 'v1.32.4' });
  server.store.put(runningPod('term', 'box'));
  server.store.put(runningPod('term', 'tty-app', { tty: true }));
});
afterAll(() => server.close());

const resize = (c: ChannelClient, width: number, height: number) =>
  c.send(4, `${JSON.stringify({ Width: width, Height: height })}\n`);

describe('exec over WebSocket v5 (what kubectl 1.30+ and a web terminal speak)', () => {
  it('a terminal: prompt, echo, resize reaching the process, Ctrl-C, exit status', async () => {
    const c = await channels(server, exec('command=sh&stdin=true&stdout=true&stderr=true&tty=true'), V5);
    expect(c.protocol).toBe('v5.channel.k8s.io');
    resize(c, 120, 40);
    await c.waitFor(1, '/ # ');
    c.send(0, 'stty size\r');
    await c.waitFor(1, 'stty size\r\n40 120\r\n/ # ');
    resize(c, 200, 50);
    c.send(0, 'echo $TERM; stty size\r');
    await c.waitFor(1, 'xterm\r\n50 200\r\n');
    c.send(0, 'sleep 3600\r');
    await c.waitFor(1, 'sleep 3600\r\n');
    c.send(0, '\x03');
    await c.waitFor(1, /\^C\r\n\/ # $/);
    c.send(0, 'exit 7\r');
    expect((await c.closed).code).toBe(1000);
    expect(c.status()).toEqual({
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: command terminated with exit code 7',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
    const session = server.streamSessions().at(-1)!;
    expect(session).toMatchObject({ tty: true, exitCode: 7 });
    expect(session.resizes).toEqual([
      { width: 120, height: 40 },
      { width: 200, height: 50 },
    ]);
  });

  it('the first message is the empty "ready" on stdout; stdin closes with [255, 0]', async () => {
    const c = await channels(server, exec('command=cat&stdin=true&stdout=true&stderr=true'), V5);
    await c.waitFor(1, '');
    expect(c.received.get(1)?.[0]?.length).toBe(0);
    c.send(0, 'one ');
    c.send(0, 'two');
    c.closeChannel(0);
    expect((await c.closed).code).toBe(1000);
    expect(c.text(1)).toBe('one two');
    expect(c.status()).toEqual({ metadata: {}, status: 'Success' });
  });

  it('the client going away kills the command and ends the session', async () => {
    const c = await channels(server, exec('command=sleep&command=3600&stdout=true'), V5);
    const session = server.streamSessions().at(-1)!;
    expect(session.endedAt).toBeUndefined();
    c.ws.terminate();
    await eventually(() => expect(session.endedAt).toBeDefined());
    expect(session.exitCode).toBe(137);
  });

  it('deleting the pod kills its processes: exit 137', async () => {
    server.store.put(runningPod('term', 'doomed'));
    const c = await channels(
      server,
      '/api/v1/namespaces/term/pods/doomed/exec?command=sleep&command=3600&stdout=1',
      V5,
    );
    await c.waitFor(1, '');
    server.store.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'term', name: 'doomed' });
    await c.closed;
    expect(c.status()).toMatchObject({
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '137' }] },
    });
  });

  it('back-pressure: a client that stops reading stops the stand-in from reading its stdin', async () => {
    const c = await channels(server, exec('command=cat&stdin=true&stdout=true'), V5);
    await c.waitFor(1, '');
    c.ws.pause();
    const chunk = Buffer.alloc(64 * 1024, 7);
    const total = 64 * 1024 * 1024;
    let sent = 0;
    // Keep writing until the socket stops taking data: the stand-in no longer reads it.
    while (sent < total && c.ws.bufferedAmount < 8 * 1024 * 1024) {
      c.send(0, chunk);
      sent += chunk.length;
      await new Promise((r) => setImmediate(r));
    }
    expect(sent).toBeLessThan(total);
    const accepted = sent - c.ws.bufferedAmount;
    // What left the client sits in kernel buffers and the stand-in's bounded queues, not in memory.
    expect(accepted).toBeLessThan(24 * 1024 * 1024);
    c.ws.resume();
    c.closeChannel(0);
    await c.closed;
    expect(c.bytes(1).length).toBe(sent);
    expect(c.status()).toEqual({ metadata: {}, status: 'Success' });
  });

  it('a stand-in for Argo CD’s terminal: attach to a TTY container, resize, type', async () => {
    const c = await channels(
      server,
      '/api/v1/namespaces/term/pods/tty-app/attach?stdin=true&stdout=true&tty=true',
      V5,
    );
    resize(c, 90, 30);
    c.send(0, 'hi\r');
    // The container's terminal echoes the keys and its process answers the line.
    await c.waitFor(1, 'hi\r\nhi\r\n');
    await eventually(() =>
      expect(server.streamSessions().at(-1)?.resizes).toEqual([{ width: 90, height: 30 }]),
    );
    c.ws.close();
    await c.closed;
  });
});

describe('API server refusals come before any upgrade, as Status objects', () => {
  it('a missing pod is 404, a pod without the subresource path 404, a non-connect upgrade 400', async () => {
    const missing = await openChannels(
      server,
      '/api/v1/namespaces/term/pods/ghost/exec?command=ls&stdout=1',
      V5,
    );
    expect(missing).toMatchObject({ status: 404 });
    expect(JSON.parse((missing as { body: string }).body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      message: 'pods "ghost" not found',
      code: 404,
    });
    const badBool = await openChannels(server, exec('command=ls&stdout=yes'), V5);
    expect(badBool).toMatchObject({ status: 400 });
    expect(JSON.parse((badBool as { body: string }).body).message).toBe(
      'strconv.ParseBool: parsing "yes": invalid syntax',
    );
  });

  it('with credentials required, an anonymous upgrade is 401', async () => {
    const guarded = await startFakeKubeApiServer({ token: 'secret' });
    try {
      guarded.store.put(runningPod('term', 'box'));
      expect(await openChannels(guarded, exec('command=ls&stdout=1'), V5)).toMatchObject({ status: 401 });
      const c = await channels(guarded, exec('command=echo&command=in&stdout=1'), V5, {
        Authorization: 'Bearer secret',
      });
      await c.closed;
      expect(c.text(1)).toBe('in\n');
    } finally {
      await guarded.close();
    }
  });
});

describe('exec over the kubelet’s older WebSocket protocols', () => {
  it('v4.channel.k8s.io: a JSON status worded by the kubelet; stdin cannot be half-closed', async () => {
    const c = await channels(
      server,
      exec('command=sh&command=-c&command=echo+out%3B+exit+2&stdout=1&stderr=1'),
      ['v4.channel.k8s.io'],
    );
    await c.closed;
    expect(c.protocol).toBe('v4.channel.k8s.io');
    expect(c.text(1)).toBe('out\n');
    expect(c.status()).toEqual({
      metadata: {},
      status: 'Failure',
      message:
        'command terminated with non-zero exit code: error executing command [sh -c echo out; exit 2], exit code 2',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '2' }] },
    });
  });

  it('base64.channel.k8s.io: text frames; the error channel carries plain text, nothing on success', async () => {
    const ok = await channels(server, exec('command=echo&command=b64&stdout=1'), ['base64.channel.k8s.io']);
    await ok.closed;
    expect(ok.protocol).toBe('base64.channel.k8s.io');
    expect(ok.text(1)).toBe('b64\n');
    expect(ok.text(3)).toBe('');
    const failed = await channels(server, exec('command=false&stdout=1'), ['base64.channel.k8s.io']);
    await failed.closed;
    expect(failed.text(3)).toBe(
      'command terminated with non-zero exit code: error executing command [false], exit code 1',
    );
  });

  it('no subprotocol asked for is the binary v1 protocol; an unknown one is refused with 403', async () => {
    const none = await channels(server, exec('command=echo&command=plain&stdout=1'), []);
    await none.closed;
    expect(none.protocol).toBe('');
    expect(none.text(1)).toBe('plain\n');
    expect(await openChannels(server, exec('command=true&stdout=1'), ['v9.channel.k8s.io'])).toMatchObject({
      status: 403,
    });
  });

  it('a v4 client asking for no streams is refused before the upgrade, as the kubelet does', async () => {
    expect(await openChannels(server, exec('command=true'), ['v4.channel.k8s.io'])).toMatchObject({
      status: 400,
      body: 'you must specify at least 1 of stdin, stdout, stderr\n',
    });
  });
});

describe('port-forward over the kubelet’s WebSocket channel protocol', () => {
  it('a data and an error channel per port, each opened with the port number', async () => {
    const c = await channels(server, '/api/v1/namespaces/term/pods/box/portforward?ports=8080,7777', [
      'v4.channel.k8s.io',
    ]);
    await c.waitFor(3, /.{3,}/s);
    expect(c.received.get(0)?.[0]).toEqual(Buffer.from([0x90, 0x1f]));
    expect(c.received.get(1)?.[0]).toEqual(Buffer.from([0x90, 0x1f]));
    expect(c.received.get(2)?.[0]).toEqual(Buffer.from([0x61, 0x1e]));
    expect(c.bytes(3).subarray(2).toString()).toMatch(
      /^error forwarding port 7777 to pod [0-9a-f]{64}, uid : .*connection refused/,
    );
    c.send(0, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await c.closed;
    expect(c.bytes(0).subarray(2).toString()).toMatch(
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*X-Pod-Name: box[\s\S]*\r\n\r\nok\n$/,
    );
  });

  it('without ports the kubelet refuses it', async () => {
    expect(
      await openChannels(server, '/api/v1/namespaces/term/pods/box/portforward', ['v4.channel.k8s.io']),
    ).toMatchObject({
      status: 400,
      body: 'query parameter "port" is required\n',
    });
  });
});

it('an upgrade the API server does not serve (an h2c probe) is answered as a plain request', async () => {
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${server.url}/version`, {
      headers: { Connection: 'Upgrade, HTTP2-Settings', Upgrade: 'h2c' },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body).gitVersion).toBe('v1.32.4');
});
