import { text } from 'node:stream/consumers';
import { type Frame, streamIdOf } from '@pullplane/proto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryLink, type LogicalStream, Multiplexer, type MultiplexerOptions } from '../src/index.js';
import { flatten, settle } from './support.js';

type Handler = (s: LogicalStream) => void;

/** Two multiplexers over a memory link; every message (transport write) is recorded per side. */
function pair(onStream: Handler, gatewayOpts: Partial<MultiplexerOptions> = {}, agentOpts = gatewayOpts) {
  const link = createMemoryLink();
  const gateway = new Multiplexer({ sink: link.a, idParity: 'odd', ...gatewayOpts });
  const agent = new Multiplexer({ sink: link.b, idParity: 'even', onStream, ...agentOpts });
  const toGateway: Frame[][] = [];
  const toAgent: Frame[][] = [];
  link.connect(
    (m) => {
      toGateway.push(flatten(m));
      gateway.receive(m);
    },
    (m) => {
      toAgent.push(flatten(m));
      agent.receive(m);
    },
  );
  return { gateway, agent, link, toGateway, toAgent };
}

/** A responder's request body (text() would destroy a duplex whose other side is still open). */
function body(s: LogicalStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).toString()));
    s.on('error', reject);
  });
}

const get = (path: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
});

afterEach(() => {
  vi.useRealTimers();
});

describe('one frame per direction for small requests', () => {
  it('sends a small GET as one Open and answers it with one ResponseHead carrying body and end', async () => {
    const { gateway, link, toGateway, toAgent } = pair((s) => {
      s.respond(200, [{ name: 'content-type', value: 'application/json' }]);
      s.end('{"kind":"Pod"}');
    });
    const s = gateway.open(get('/api/v1/namespaces/default/pods/web'));
    const head = await s.responseHead();
    expect(await text(s)).toBe('{"kind":"Pod"}');
    await settle(link);
    // One transport write each way, each a single frame.
    expect(link.written()).toEqual({ toA: 1, toB: 1 });
    expect(toAgent).toHaveLength(1);
    expect(toAgent[0]!.map((f) => f.kind.case)).toEqual(['open']);
    expect(toAgent[0]![0]!.kind.value).toMatchObject({ hasBody: false });
    expect(toGateway[0]!.map((f) => f.kind.case)).toEqual(['responseHead']);
    const wire = toGateway[0]![0]!.kind.value as { endStream: boolean; body: Uint8Array };
    expect(wire.endStream).toBe(true);
    expect(Buffer.from(wire.body).toString()).toBe('{"kind":"Pod"}');
    // The head handed to the caller has status and headers; the body came through the stream.
    expect(head).toMatchObject({ status: 200, endStream: false, body: new Uint8Array(0) });
    expect(gateway.activeStreams).toBe(0);
  });

  it('sends a small POST written in the same turn as one Open with its body inline', async () => {
    const seen: string[] = [];
    const { gateway, link, toAgent } = pair(async (s) => {
      seen.push(await body(s));
      s.respond(201);
      s.end();
    });
    const s = gateway.open({ ...get('/api/v1/namespaces'), hasBody: true });
    s.end('{"metadata":{"name":"x"}}');
    expect((await s.responseHead()).status).toBe(201);
    await text(s);
    await settle(link);
    expect(seen).toEqual(['{"metadata":{"name":"x"}}']);
    expect(link.written().toB).toBe(1);
    const open = toAgent[0]![0]!;
    expect(open.kind.case).toBe('open');
    expect(open.kind.value).toMatchObject({ hasBody: false });
    expect(Buffer.from((open.kind.value as { body: Uint8Array }).body).toString()).toBe(
      '{"metadata":{"name":"x"}}',
    );
  });

  it('writes all frames of one turn at once: 50 opens are one transport write', async () => {
    const { gateway, link, toAgent } = pair((s) => {
      s.respond(204);
      s.end();
    });
    const streams = Array.from({ length: 50 }, (_, i) => gateway.open(get(`/s/${i}`)));
    await Promise.all(streams.map((s) => s.responseHead()));
    await settle(link);
    expect(toAgent).toHaveLength(1);
    expect(toAgent[0]).toHaveLength(50);
    expect(link.written().toB).toBe(1);
  });

  it('speaks v1 to a v1 peer: no folding, separate End, same results', async () => {
    const { gateway, link, toGateway, toAgent } = pair(
      (s) => {
        s.respond(200);
        s.end('v1 body');
      },
      { protocolVersion: 1 },
    );
    const s = gateway.open({ ...get('/x'), hasBody: true });
    s.end('req');
    expect(await text(s)).toBe('v1 body');
    await settle(link);
    const down = toAgent.flat();
    const up = toGateway.flat();
    expect(down.map((f) => f.kind.case)).toEqual(['open', 'data', 'end']);
    expect(up.map((f) => f.kind.case)).toEqual(['responseHead', 'data', 'end']);
    for (const f of [...down, ...up]) {
      const v = f.kind.value as { endStream?: boolean; body?: Uint8Array };
      expect(v.endStream ?? false).toBe(false);
      expect(v.body?.byteLength ?? 0).toBe(0);
    }
    // Still batched: one write each way.
    expect(link.written()).toEqual({ toA: 1, toB: 1 });
  });

  it('serves a v1 initiator from a v2 responder, and an inline body the peer cannot take goes as Data', async () => {
    const { gateway, toAgent, link } = pair(
      async (s) => {
        const request = await body(s);
        s.respond(200);
        s.end(`got ${request.length}`);
      },
      { protocolVersion: 1 },
      {},
    );
    // A gateway relaying a proxy's Open with its body inline, towards a v1 agent.
    const s = gateway.open({ ...get('/x'), body: Buffer.from('inline'), hasBody: false });
    expect(await text(s)).toBe('got 6');
    await settle(link);
    expect(toAgent.flat().map((f) => f.kind.case)).toEqual(['open', 'data', 'end']);
  });
});

describe('window updates', () => {
  it('sends at most one WindowUpdate per stream per write', async () => {
    const initialWindow = 64 * 1024;
    const { gateway, link, toAgent } = pair(
      (s) => {
        s.respond(200);
        // Many small writes: credit comes back in many small steps within one turn.
        for (let i = 0; i < 400; i++) s.write(Buffer.alloc(4096, i));
        s.end();
      },
      { initialWindow, maxChunkSize: 16 * 1024, maxStreamWindow: initialWindow },
    );
    const streams = Array.from({ length: 4 }, (_, i) => gateway.open(get(`/bulk/${i}`)));
    const bodies = await Promise.all(streams.map((s) => text(s)));
    for (const b of bodies) expect(b.length).toBe(400 * 4096);
    await settle(link);
    let updates = 0;
    for (const message of toAgent) {
      const perStream = new Map<number, number>();
      for (const f of message)
        if (f.kind.case === 'windowUpdate') {
          updates++;
          perStream.set(f.kind.value.streamId, (perStream.get(f.kind.value.streamId) ?? 0) + 1);
        }
      for (const n of perStream.values()) expect(n).toBe(1);
    }
    expect(updates).toBeGreaterThan(10);
  });

  it('folds the credit of a whole window drained in one turn into one WindowUpdate', async () => {
    const initialWindow = 64 * 1024;
    const { gateway, link, toAgent } = pair(
      (s) => {
        s.respond(200);
        for (let i = 0; i < 32; i++) s.write(Buffer.alloc(8192, i));
        s.end();
      },
      { initialWindow, maxChunkSize: 8192, maxStreamWindow: initialWindow },
    );
    const s = gateway.open(get('/list'));
    await s.responseHead();
    // Not read yet: a full window (eight chunks) waits.
    await settle(link);
    const before = toAgent.length;
    // Now read it all in one synchronous loop: credit falls due every two chunks.
    let read = 0;
    for (let c = s.read(); c !== null; c = s.read()) read += c.length;
    expect(read).toBe(initialWindow);
    await settle(link);
    const credit = toAgent
      .slice(before)[0]!
      .filter((f) => f.kind.case === 'windowUpdate')
      .map((f) => (f.kind.case === 'windowUpdate' ? f.kind.value.increment : 0));
    expect(credit).toEqual([initialWindow]);
    s.resume();
  });

  it('returns credit in quarter windows to a reader that reads a little at a time', async () => {
    const initialWindow = 64 * 1024;
    const { gateway, link, toAgent } = pair(
      (s) => {
        s.respond(200);
        // Small writes, so small chunks: credit could come back in tiny steps.
        for (let i = 0; i < 128; i++) s.write(Buffer.alloc(2048, i));
        s.end();
      },
      { initialWindow, maxChunkSize: 16 * 1024, maxStreamWindow: initialWindow },
    );
    const s = gateway.open(get('/trickle'));
    await s.responseHead();
    let read = 0;
    while (!s.readableEnded) {
      const c = s.read(1024) as Buffer | null;
      if (c) read += c.length;
      else if (read === 256 * 1024) break;
      await new Promise((r) => setImmediate(r));
    }
    await settle(link);
    expect(read).toBe(256 * 1024);
    const increments = toAgent
      .flat()
      .flatMap((f) => (f.kind.case === 'windowUpdate' ? [f.kind.value.increment] : []));
    // Byte-exact credit would hand the sender 1 KiB at a time and so 1 KiB frames.
    expect(increments.length).toBeGreaterThan(0);
    expect(Math.min(...increments)).toBeGreaterThanOrEqual(initialWindow / 4);
  });

  it('sends no WindowUpdate for a stream once its end has arrived', async () => {
    // The whole body fits the window: it all arrives, with its end, before anyone reads.
    const initialWindow = 1024 * 1024;
    const { gateway, link } = pair(
      (s) => {
        s.respond(200);
        for (let i = 0; i < 100; i++) s.write(Buffer.alloc(8192, i));
        s.end();
      },
      { initialWindow, maxStreamWindow: initialWindow },
    );
    const ended = new Set<number>();
    const late: number[] = [];
    const receive = gateway.receive.bind(gateway);
    gateway.receive = (m) => {
      for (const f of flatten(m)) {
        const id = streamIdOf(f);
        const ends =
          f.kind.case === 'end' ||
          (f.kind.case === 'data' && f.kind.value.endStream) ||
          (f.kind.case === 'responseHead' && f.kind.value.endStream);
        if (ends && id !== undefined) ended.add(id);
      }
      receive(m);
    };
    const send = link.a.send.bind(link.a);
    link.a.send = (f) => {
      if (f.kind.case === 'windowUpdate') {
        if (ended.has(f.kind.value.streamId)) late.push(f.kind.value.streamId);
      }
      return send(f);
    };
    const s = gateway.open(get('/bulk'));
    await s.responseHead();
    await settle(link);
    expect(ended.size).toBe(1);
    expect(gateway.windowBudget.outstanding).toBe(100 * 8192);
    // Reading it all now frees four windows' quarter of credit over: none of it is sent.
    expect(await text(s)).toHaveLength(100 * 8192);
    await settle(link);
    expect(late).toEqual([]);
  });
});
