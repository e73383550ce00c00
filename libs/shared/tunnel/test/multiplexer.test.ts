import { once } from 'node:events';
import { text } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { create } from '@bufbuild/protobuf';
import { type Frame, frame, OpenSchema } from '@pullplane/proto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createMemoryLink,
  type LogicalStream,
  Multiplexer,
  type MultiplexerOptions,
  TunnelError,
  TunnelErrorCode,
} from '../src/index.js';
import { flatten, settle } from './support.js';

type Handler = (s: LogicalStream) => void;

/**
 * A gateway-side and an agent-side multiplexer over an in-memory link, with every frame each
 * side receives recorded (batches unpacked), in order.
 */
function pair(onStream: Handler | undefined, opts: Partial<MultiplexerOptions> = {}, agentOpts = opts) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, idParity: 'odd', ...opts });
  const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream, ...agentOpts });
  const atGateway: Frame[] = [];
  const atAgent: Frame[] = [];
  // Both directions in arrival order.
  const log: Array<{ at: 'gateway' | 'agent'; frame: Frame }> = [];
  link.connect(
    (f) => {
      for (const x of flatten(f)) {
        atGateway.push(x);
        log.push({ at: 'gateway', frame: x });
      }
      gateway.receive(f);
    },
    (f) => {
      for (const x of flatten(f)) {
        atAgent.push(x);
        log.push({ at: 'agent', frame: x });
      }
      agent.receive(f);
    },
  );
  return { gateway, agent, link, atGateway, atAgent, log };
}

const httpOpen = (path: string, hasBody = false) => ({
  head: { case: 'http' as const, value: { method: hasBody ? 'POST' : 'GET', path, headers: [] } },
  hasBody,
});

/** An agent-side handler that echoes the request path and body back. */
const echo: Handler = (s) => {
  const head = s.open.head.case === 'http' ? s.open.head.value : undefined;
  s.respond(200, [{ name: 'x-path', value: head?.path ?? '' }]);
  s.pipe(s);
};

/** Resolves with the next stream the agent side is handed. */
function nextStream(handlers: Handler[]): Promise<LogicalStream> {
  return new Promise((resolve) => handlers.push(resolve));
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('Multiplexer', () => {
  it('carries a request and its response over one logical stream', async () => {
    const { gateway } = pair(echo);
    const s = gateway.open(httpOpen('/api/v1/pods', true));
    s.end('hello tunnel');
    const head = await s.responseHead();
    expect(head.status).toBe(200);
    expect(head.headers).toEqual([expect.objectContaining({ name: 'x-path', value: '/api/v1/pods' })]);
    const closed = once(s, 'close');
    expect(await text(s)).toBe('hello tunnel');
    await closed;
    expect(gateway.activeStreams).toBe(0);
  });

  it('runs hundreds of concurrent streams without mixing their bodies', async () => {
    const { gateway, agent, link } = pair(echo);
    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const s = gateway.open(httpOpen(`/s/${i}`, true));
        s.end(`body-${i}-`.repeat(100));
        return text(s);
      }),
    );
    for (const [i, r] of results.entries()) expect(r).toBe(`body-${i}-`.repeat(100));
    await settle(link);
    expect(gateway.activeStreams).toBe(0);
    expect(agent.activeStreams).toBe(0);
  });

  it('moves a large body in window-sized steps and splits it into bounded chunks', async () => {
    const maxChunkSize = 16 * 1024;
    const initialWindow = 64 * 1024;
    // Window growth off: this is about the negotiated chunk size and window.
    const { gateway, atGateway, log } = pair(echo, {
      maxChunkSize,
      initialWindow,
      maxStreamWindow: initialWindow,
    });
    const s = gateway.open(httpOpen('/big', true));
    const payload = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    let got = 0;
    s.on('data', (c: Buffer) => {
      got += c.length;
    });
    s.end(payload);
    await once(s, 'end');
    expect(got).toBe(payload.length);
    const sizes = atGateway.flatMap((f) => (f.kind.case === 'data' ? [f.kind.value.chunk.byteLength] : []));
    expect(Math.max(...sizes)).toBe(maxChunkSize);
    // Replay the response direction: data reaching the gateway against credit reaching the agent.
    let received = 0;
    let credited = 0;
    let worstUncredited = 0;
    let steps = 0;
    for (const { at, frame: f } of log) {
      // The first chunk may ride inline in the response head.
      const bytes =
        f.kind.case === 'data'
          ? f.kind.value.chunk
          : f.kind.case === 'responseHead'
            ? f.kind.value.body
            : undefined;
      if (at === 'gateway' && bytes) {
        received += bytes.byteLength;
        worstUncredited = Math.max(worstUncredited, received - credited);
      } else if (at === 'agent' && f.kind.case === 'windowUpdate') {
        credited += f.kind.value.increment;
        steps++;
      }
    }
    expect(received).toBe(payload.length);
    // The agent never had more than one window unacknowledged, and used most of it...
    expect(worstUncredited).toBeLessThanOrEqual(initialWindow);
    expect(worstUncredited).toBeGreaterThan(initialWindow / 2);
    // ...so the body crossed in window-sized steps, each unlocked by credit.
    expect(credited).toBeGreaterThanOrEqual(payload.length - initialWindow);
    // No increment can exceed a window, so that takes at least this many updates.
    expect(steps).toBeGreaterThanOrEqual(Math.floor((payload.length - initialWindow) / initialWindow));
  });

  it('keeps other streams flowing while one reader is paused, and holds only its window', async () => {
    let agentSide: LogicalStream | undefined;
    const { gateway, agent, link } = pair((s) => {
      const path = s.open.head.case === 'http' ? s.open.head.value.path : '';
      s.respond(200);
      if (path === '/watch') {
        agentSide = s;
        const chunk = Buffer.alloc(32 * 1024, 1);
        const pump = () => {
          while (!s.destroyed && s.write(chunk)) {
            /* fill until backpressure */
          }
          if (!s.destroyed) s.once('drain', pump);
        };
        pump();
      } else {
        s.end('quick');
      }
    });
    const watch = gateway.open(httpOpen('/watch'));
    await watch.responseHead();
    watch.pause();
    // The watch fills its window and stalls: the link goes quiet with the agent still writing.
    await settle(link);
    // Bytes received for the watch and not yet credited back: queued, nobody reading.
    const held = gateway.windowBudget.outstanding;
    for (let i = 0; i < 20; i++) {
      const s = gateway.open(httpOpen(`/quick/${i}`));
      expect(await text(s)).toBe('quick');
    }
    await settle(link);
    // The paused stream grew no further while the others ran: it holds at most its window.
    expect(gateway.windowBudget.outstanding).toBe(held);
    expect(held).toBeGreaterThan(gateway.initialWindow / 2);
    expect(held).toBeLessThanOrEqual(gateway.initialWindow);
    expect(watch.readableLength).toBeLessThanOrEqual(gateway.maxChunkSize);
    const cancelled = new Promise((r) => agentSide!.once('close', r));
    watch.destroy();
    await cancelled;
    expect(agentSide!.errored).toMatchObject({ code: TunnelErrorCode.CANCELLED });
    expect(agent.activeStreams).toBe(0);
  });

  it('carries the W3C trace context and request id from opener to responder', async () => {
    const handlers: Handler[] = [];
    const { gateway } = pair((s) => handlers.shift()?.(s));
    const arrived = nextStream(handlers);
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    gateway.open({
      ...httpOpen('/api'),
      traceparent,
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
      requestId: 'r-1',
    });
    const s = await arrived;
    expect(s.open).toMatchObject({
      traceparent,
      tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
      requestId: 'r-1',
    });
  });

  it('tells the responder when the requester cancels', async () => {
    let serverSide: LogicalStream | undefined;
    const { gateway } = pair((s) => {
      serverSide = s;
      s.respond(200);
      s.write('partial');
    });
    const s = gateway.open(httpOpen('/logs?follow=true'));
    await s.responseHead();
    s.destroy();
    const [err] = (await once(serverSide!, 'error')) as [TunnelError];
    expect(err).toBeInstanceOf(TunnelError);
    expect(err.code).toBe(TunnelErrorCode.CANCELLED);
  });

  it('surfaces a responder reset with its reason', async () => {
    const { gateway } = pair((s) =>
      s.reset(TunnelErrorCode.REFUSED, 'resource proxy is disabled on this agent'),
    );
    const s = gateway.open(httpOpen('/api'));
    await expect(s.responseHead()).rejects.toMatchObject({
      code: TunnelErrorCode.REFUSED,
      message: 'resource proxy is disabled on this agent',
    });
  });

  it('fails every open stream at once when the transport closes', async () => {
    const { gateway } = pair((s) => s.respond(200));
    const streams = [gateway.open(httpOpen('/a')), gateway.open(httpOpen('/b'))];
    await Promise.all(streams.map((s) => s.responseHead()));
    const errors = streams.map((s) => once(s, 'error'));
    gateway.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'agent disconnected'));
    for (const e of await Promise.all(errors)) {
      expect(e[0]).toMatchObject({ code: TunnelErrorCode.UNAVAILABLE, message: 'agent disconnected' });
    }
    expect(() => gateway.open(httpOpen('/c'))).toThrow(/agent disconnected/);
  });

  it('refuses opens when no handler is installed or after goaway', async () => {
    const { gateway, agent } = pair(undefined);
    await expect(gateway.open(httpOpen('/x')).responseHead()).rejects.toMatchObject({
      code: TunnelErrorCode.REFUSED,
    });
    const goaway = once(agent, 'goaway');
    gateway.goAway('gateway shutting down', 5000);
    expect((await goaway)[0]).toMatchObject({ reason: 'gateway shutting down', drainMs: 5000 });
    expect(() => gateway.open(httpOpen('/y'))).toThrow(/going away/);
  });

  it('resets a stream whose peer overruns its credit, in Data or inline in Open', async () => {
    const handlers: Handler[] = [];
    const { gateway, link } = pair((s) => handlers.shift()?.(s));
    const arrived = nextStream(handlers);
    const s = gateway.open(httpOpen('/upload', true));
    const serverSide = await arrived;
    // Bypass the stream's own accounting and blast more than the window.
    link.a.send(
      frame({ case: 'data', value: { streamId: s.id, chunk: new Uint8Array(gateway.initialWindow + 1) } }),
    );
    await settle(link);
    expect(serverSide.errored).toMatchObject({ code: TunnelErrorCode.FLOW_CONTROL });
    await expect(s.responseHead()).rejects.toMatchObject({ code: TunnelErrorCode.FLOW_CONTROL });

    // An inline body over the window: refused before any handler sees the stream.
    const resets: string[] = [];
    const receive = gateway.receive.bind(gateway);
    gateway.receive = (f) => {
      for (const x of flatten(f))
        if (x.kind.case === 'reset' && x.kind.value.streamId === 1001) resets.push(x.kind.value.message);
      receive(f);
    };
    let handled = false;
    handlers.push(() => {
      handled = true;
    });
    link.a.send(
      frame({
        case: 'open',
        value: create(OpenSchema, {
          streamId: 1001,
          ...httpOpen('/big'),
          body: new Uint8Array(gateway.initialWindow + 1),
        }),
      }),
    );
    await settle(link);
    expect(resets).toEqual([expect.stringMatching(/bytes with only \d+ bytes of credit/)]);
    expect(handled).toBe(false);
  });

  it('rejects a peer open with a stream id of the wrong parity', async () => {
    const { link, atGateway } = pair(echo);
    // The gateway opens odd ids; an even one (the agent's parity) from the gateway side is a
    // protocol violation.
    link.a.send(frame({ case: 'open', value: create(OpenSchema, { streamId: 4, ...httpOpen('/') }) }));
    await settle(link);
    expect(atGateway.map((f) => f.kind.case === 'reset' && f.kind.value.message)).toEqual([
      expect.stringMatching(/not valid/),
    ]);
  });

  it('answers pings with pongs that measure the round trip on the pinging side', async () => {
    const { gateway, atAgent, atGateway } = pair(echo);
    const t0 = 1_700_000_000_000;
    const now = vi.spyOn(Date, 'now').mockReturnValue(t0);
    // The clock moves on by 250 ms while the pong is on its way back.
    const receive = gateway.receive.bind(gateway);
    gateway.receive = (f) => {
      if (flatten(f).some((x) => x.kind.case === 'pong')) now.mockReturnValue(t0 + 250);
      receive(f);
    };
    const pong = once(gateway, 'pong');
    gateway.ping();
    const [rtt] = (await pong) as [number];
    expect(rtt).toBe(250);
    const ping = atAgent.find((f) => f.kind.case === 'ping');
    expect(ping?.kind.case === 'ping' && ping.kind.value.sentUnixMs).toBe(BigInt(t0));
    const echoed = atGateway.find((f) => f.kind.case === 'pong');
    expect(echoed?.kind.case === 'pong' && echoed.kind.value.sentUnixMs).toBe(BigInt(t0));
  });

  it('pipes a request body through pipeline() with backpressure', async () => {
    const handlers: Handler[] = [];
    const { gateway, link } = pair((s) => handlers.shift()?.(s));
    const arrived = nextStream(handlers);
    const s = gateway.open(httpOpen('/upload', true));
    let produced = 0;
    const body = (async function* () {
      for (let i = 0; i < 200; i++) {
        produced += 10_000;
        yield Buffer.alloc(10_000, i);
      }
    })();
    const sent = pipeline(body, s);
    // The responder does not read yet: the writer must stop once the window and the buffers
    // in between are full, long before the 2,000,000-byte body is produced.
    const serverSide = await arrived;
    serverSide.pause();
    await settle(link);
    const bound = gateway.initialWindow + gateway.maxChunkSize * 2 + 3 * 10_000;
    expect(produced).toBeGreaterThanOrEqual(gateway.initialWindow);
    expect(produced).toBeLessThanOrEqual(bound);
    // Reading resumes, and everything arrives.
    let n = 0;
    serverSide.on('data', (c: Buffer) => {
      n += c.length;
    });
    serverSide.on('end', () => {
      serverSide.respond(200);
      serverSide.end(String(n));
    });
    serverSide.resume();
    const reply = text(s);
    await sent;
    expect(await reply).toBe('2000000');
    expect(produced).toBe(2_000_000);
  });
});
