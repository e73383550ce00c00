import { once } from 'node:events';
import { text } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { create } from '@bufbuild/protobuf';
import { frame, OpenSchema } from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import {
  createMemoryLink,
  type LogicalStream,
  Multiplexer,
  type MultiplexerOptions,
  TunnelError,
  TunnelErrorCode,
} from '../src/index.js';

type Handler = (s: LogicalStream) => void;

function pair(onStream: Handler | undefined, opts: Partial<MultiplexerOptions> = {}) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, role: 'gateway', ...opts });
  const agent = new Multiplexer({ sink: link.b, role: 'agent', onStream, ...opts });
  link.connect(
    (f) => gateway.receive(f),
    (f) => agent.receive(f),
  );
  return { gateway, agent, link };
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
    const { gateway, agent } = pair(echo);
    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const s = gateway.open(httpOpen(`/s/${i}`, true));
        s.end(`body-${i}-`.repeat(100));
        return text(s);
      }),
    );
    for (const [i, r] of results.entries()) expect(r).toBe(`body-${i}-`.repeat(100));
    await new Promise((r) => setImmediate(r));
    expect(gateway.activeStreams).toBe(0);
    expect(agent.activeStreams).toBe(0);
  });

  it('moves a large body in window-sized steps and splits it into bounded chunks', async () => {
    const maxChunkSize = 16 * 1024;
    const sizes: number[] = [];
    const { gateway } = pair(echo, { maxChunkSize, initialWindow: 64 * 1024 });
    const origReceive = gateway.receive.bind(gateway);
    gateway.receive = (f) => {
      if (f.kind.case === 'data') sizes.push(f.kind.value.chunk.byteLength);
      origReceive(f);
    };
    const s = gateway.open(httpOpen('/big', true));
    const payload = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    let received = 0;
    s.on('data', (c: Buffer) => {
      received += c.length;
    });
    s.end(payload);
    await once(s, 'end');
    expect(received).toBe(payload.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(maxChunkSize);
  });

  it('keeps other streams flowing while one reader is paused', async () => {
    // The agent streams an endless body on /watch; nobody reads it on the gateway side.
    const { gateway, agent } = pair((s) => {
      const path = s.open.head.case === 'http' ? s.open.head.value.path : '';
      s.respond(200);
      if (path === '/watch') {
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
    // Let the watch fill its window and stall.
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const s = gateway.open(httpOpen(`/quick/${i}`));
      expect(await text(s)).toBe('quick');
    }
    // The paused stream holds at most its window plus one readable buffer on the gateway.
    expect(watch.readableLength).toBeLessThanOrEqual(gateway.initialWindow + gateway.maxChunkSize);
    expect(Date.now() - started).toBeLessThan(5_000);
    watch.destroy();
    await new Promise((r) => setTimeout(r, 20));
    expect(agent.activeStreams).toBe(0);
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

  it('resets a stream whose peer overruns its credit', async () => {
    let serverSide: LogicalStream | undefined;
    const { gateway, link } = pair((s) => {
      serverSide = s;
    });
    const s = gateway.open(httpOpen('/upload', true));
    await new Promise((r) => setImmediate(r));
    const errored = once(serverSide!, 'error');
    // Bypass the stream's own accounting and blast more than the window.
    link.a.send(
      frame({ case: 'data', value: { streamId: s.id, chunk: new Uint8Array(gateway.initialWindow + 1) } }),
    );
    expect((await errored)[0]).toMatchObject({ code: TunnelErrorCode.FLOW_CONTROL });
    await expect(s.responseHead()).rejects.toMatchObject({ code: TunnelErrorCode.FLOW_CONTROL });
  });

  it('rejects a peer open with a stream id of the wrong parity', async () => {
    const { gateway, link } = pair(echo);
    const resets: string[] = [];
    const orig = gateway.receive.bind(gateway);
    gateway.receive = (f) => {
      if (f.kind.case === 'reset') resets.push(f.kind.value.message);
      orig(f);
    };
    // The gateway opens odd ids; an odd id coming from the gateway side to the agent is fine,
    // but an even one (the agent's parity) is a protocol violation.
    link.a.send(frame({ case: 'open', value: create(OpenSchema, { streamId: 4, ...httpOpen('/') }) }));
    await new Promise((r) => setTimeout(r, 10));
    expect(resets).toEqual([expect.stringMatching(/not valid/)]);
  });

  it('answers pings with pongs', async () => {
    const { gateway } = pair(echo);
    const pong = once(gateway, 'pong');
    gateway.ping();
    const [rtt] = (await pong) as [number];
    expect(rtt).toBeGreaterThanOrEqual(0);
  });

  it('pipes a request body through pipeline() with backpressure', async () => {
    const { gateway } = pair((s) => {
      let n = 0;
      s.on('data', (c: Buffer) => {
        n += c.length;
      });
      s.on('end', () => {
        s.respond(200);
        s.end(String(n));
      });
    });
    const s = gateway.open(httpOpen('/upload', true));
    const body = (async function* () {
      for (let i = 0; i < 200; i++) yield Buffer.alloc(10_000, i);
    })();
    const reply = text(s);
    await pipeline(body, s);
    expect(await reply).toBe('2000000');
  });
});
