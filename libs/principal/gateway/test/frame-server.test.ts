import http2 from 'node:http2';
import { status } from '@grpc/grpc-js';
import { createMemoryBus } from '@pullplane/bus';
import { grpcMessageValue } from '@pullplane/grpc-frames';
import {
  AGENT_TUNNEL_CONNECT_PATH,
  encodeFrameFast,
  frame,
  GRPC_MESSAGE_PREFIX_BYTES,
  MAX_TUNNEL_MESSAGE_BYTES,
} from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import { MAX_CALLS_PER_CONNECTION } from '../src/frame-server.js';
import { cleanups, rawAgent, startGateway } from './support.js';

/** gRPC's message prefix in front of `body`; `flag` 1 says compressed. */
function message(body: Uint8Array, flag = 0, length = body.byteLength): Buffer {
  const out = Buffer.alloc(GRPC_MESSAGE_PREFIX_BYTES + body.byteLength);
  out[0] = flag;
  out.writeUInt32BE(length, 1);
  out.set(body, GRPC_MESSAGE_PREFIX_BYTES);
  return out;
}

const hello = () =>
  encodeFrameFast(
    frame({
      case: 'hello',
      value: { minProtocolVersion: 1, maxProtocolVersion: 1, heartbeatIntervalMs: 30_000 },
    }),
  );

function connect(port: number): http2.ClientHttp2Session {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  cleanups.push(() => session.destroy());
  return session;
}

interface Answer {
  status?: number | undefined;
  grpcStatus?: string | undefined;
  grpcMessage?: string | undefined;
  /** The stream ended with a reset before any answer (its code). */
  resetCode?: number | undefined;
}

/**
 * Sends one call by hand (headers as an agent sends them, then `body` bytes, then maybe the end)
 * and resolves with the gRPC status it was answered with, from the head or the trailers.
 */
function rawCall(
  session: http2.ClientHttp2Session,
  opts: { path?: string; headers?: http2.OutgoingHttpHeaders; body?: Buffer[]; end?: boolean },
): Promise<Answer> {
  const stream = session.request({
    ':method': 'POST',
    ':path': opts.path ?? AGENT_TUNNEL_CONNECT_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    'x-agent': 'agent-a',
    ...opts.headers,
  });
  stream.on('error', () => undefined);
  const answer: Answer = {};
  return new Promise((resolve) => {
    stream.on('response', (h) => {
      answer.status = h[':status'];
      if (h['grpc-status'] !== undefined) {
        answer.grpcStatus = String(h['grpc-status']);
        answer.grpcMessage = h['grpc-message'] as string | undefined;
      }
    });
    stream.on('trailers', (t) => {
      answer.grpcStatus = String(t['grpc-status']);
      answer.grpcMessage = t['grpc-message'] as string | undefined;
    });
    stream.resume();
    stream.on('close', () => {
      if (answer.status === undefined && answer.grpcStatus === undefined) answer.resetCode = stream.rstCode;
      resolve(answer);
    });
    for (const b of opts.body ?? []) stream.write(b);
    if (opts.end) stream.end();
  });
}

describe("the gateway's gRPC server, at the wire", () => {
  it('answers what is not gRPC with 415, and an unknown method UNIMPLEMENTED', async () => {
    const g = await startGateway(createMemoryBus());
    const session = connect(g.agentPort);
    expect(await rawCall(session, { headers: { 'content-type': 'text/plain' }, end: true })).toMatchObject({
      status: 415,
      grpcStatus: String(status.UNKNOWN),
    });
    expect(
      await rawCall(session, { path: '/pullplane.tunnel.v1.AgentTunnel/Other', end: true }),
    ).toMatchObject({
      status: 200,
      grpcStatus: String(status.UNIMPLEMENTED),
      grpcMessage: 'The server does not implement the method /pullplane.tunnel.v1.AgentTunnel/Other',
    });
  });

  it('refuses a message over the limit from its prefix, and other agents keep their tunnels', async () => {
    const g = await startGateway(createMemoryBus());
    const other = await rawAgent(g.agentPort, 'agent-b');
    const answer = await rawCall(connect(g.agentPort), {
      // Only the prefix: the refusal must not wait for (or buffer) the body it announces.
      body: [message(hello()), message(Buffer.alloc(0), 0, MAX_TUNNEL_MESSAGE_BYTES + 1)],
    });
    expect(answer.grpcStatus).toBe(String(status.RESOURCE_EXHAUSTED));
    expect(answer.grpcMessage).toBe(
      `Received message larger than max (${MAX_TUNNEL_MESSAGE_BYTES + 1} vs. ${MAX_TUNNEL_MESSAGE_BYTES})`,
    );
    // agent-b's tunnel is untouched: a heartbeat sent after the refusal still comes back.
    other.call.write(frame({ case: 'ping', value: { sentUnixMs: 42n } }));
    await expect
      .poll(() => other.frames.some((f) => f.kind.case === 'pong' && f.kind.value.sentUnixMs === 42n))
      .toBe(true);
  });

  it('refuses a compressed message (no compression was agreed), a message that is not a Frame, and a call cut inside a message', async () => {
    const g = await startGateway(createMemoryBus());
    const session = connect(g.agentPort);
    const [compressed, garbage, cut] = await Promise.all([
      rawCall(session, { body: [message(hello(), 1)] }),
      rawCall(session, { body: [message(Buffer.from([0xff, 0xff, 0xff]))] }),
      rawCall(session, { body: [message(hello()).subarray(0, 7)], end: true }),
    ]);
    expect(compressed).toMatchObject({
      grpcStatus: String(status.INTERNAL),
      grpcMessage: 'a compressed message, and no compression was agreed',
    });
    expect(garbage.grpcStatus).toBe(String(status.INTERNAL));
    expect(garbage.grpcMessage).toMatch(/^Error deserializing request: /);
    expect(cut).toMatchObject({
      grpcStatus: String(status.INTERNAL),
      grpcMessage: 'the call ended inside a message',
    });
  });

  it(`refuses more than ${MAX_CALLS_PER_CONNECTION} calls at once on one connection`, async () => {
    const g = await startGateway(createMemoryBus(), { helloTimeoutMs: 60_000 });
    const session = connect(g.agentPort);
    await new Promise((r) => session.once('remoteSettings', r));
    expect(session.remoteSettings.maxConcurrentStreams).toBe(MAX_CALLS_PER_CONNECTION);
    // Calls that say nothing hold their streams open (waiting for Hello).
    const held = [];
    for (let i = 0; i < MAX_CALLS_PER_CONNECTION; i++) {
      const s = session.request({
        ':method': 'POST',
        ':path': AGENT_TUNNEL_CONNECT_PATH,
        'content-type': 'application/grpc',
        'x-agent': `agent-${i}`,
      });
      s.on('error', () => undefined);
      held.push(s);
    }
    // One more: not served while the others hold every slot. Another connection's call, answered
    // meanwhile, is the later event that shows it.
    const extra = rawCall(session, { path: '/not.a/Method', end: true });
    let extraAnswered = false;
    void extra.then(() => {
      extraAnswered = true;
    });
    expect((await rawCall(connect(g.agentPort), { path: '/not.a/Method', end: true })).grpcStatus).toBe(
      String(status.UNIMPLEMENTED),
    );
    expect(extraAnswered).toBe(false);
    // A slot frees: now it is served.
    held[0]!.close();
    expect((await extra).grpcStatus).toBe(String(status.UNIMPLEMENTED));
    for (const s of held) s.close();
  });

  it("gives authenticators the call's metadata without gRPC's transport headers, as grpc-js did", async () => {
    const seen: string[][] = [];
    const g = await startGateway(createMemoryBus(), {
      authenticateAgent: (ctx) => {
        seen.push(Object.keys(ctx.metadata.getMap()).sort());
        return { ok: false, code: 'TEST', reason: 'only looking' };
      },
    });
    const answer = await rawCall(connect(g.agentPort), {
      headers: { authorization: 'Bearer x', 'grpc-timeout': '5S', 'grpc-accept-encoding': 'identity' },
      body: [message(hello())],
    });
    expect(answer.grpcStatus).toBe(String(status.UNAUTHENTICATED));
    expect(seen).toEqual([['authorization', 'x-agent']]);
  });

  it('percent-encodes what gRPC asks to in a status message', () => {
    expect(grpcMessageValue('plain text: ok')).toBe('plain text: ok');
    expect(grpcMessageValue('100% — done\n')).toBe('100%25 %E2%80%94 done%0A');
  });
});
