import { describe, expect, it } from 'vitest';
import {
  createMemoryLink,
  type LogicalStream,
  MAX_CHUNK_SIZE_LIMIT,
  Multiplexer,
  type MultiplexerOptions,
  WindowBudget,
} from '../src/index.js';
import { flatten, settle } from './support.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** The agent answers every stream with `size` bytes (endless when undefined) in 512 KiB writes. */
function pair(size: number | undefined, gatewayOpts: Partial<MultiplexerOptions>) {
  const link = createMemoryLink();
  const base = { initialWindow: 64 * KiB, maxChunkSize: 16 * KiB };
  const gateway = new Multiplexer({ sink: link.a, idParity: 'odd', ...base, ...gatewayOpts });
  const agent = new Multiplexer({
    sink: link.b,
    idParity: 'even',
    ...base,
    onStream: (s: LogicalStream) => {
      s.respond(200);
      const chunk = Buffer.alloc(512 * KiB, 1);
      let left = size ?? Number.POSITIVE_INFINITY;
      const pump = () => {
        while (!s.destroyed && left > 0) {
          left -= chunk.length;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
        if (!s.destroyed) s.end();
      };
      pump();
    },
  });
  const chunkSizes: number[] = [];
  link.connect(
    (m) => {
      for (const f of flatten(m)) if (f.kind.case === 'data') chunkSizes.push(f.kind.value.chunk.byteLength);
      gateway.receive(m);
    },
    (m) => agent.receive(m),
  );
  return { gateway, agent, link, chunkSizes };
}

const get = (path: string) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
});

describe('window growth for bulk streams', () => {
  it('grows the window and chunk size of a stream whose reader keeps up, and gives it back', async () => {
    const budget = new WindowBudget(2 * MiB);
    const { gateway, link, chunkSizes } = pair(16 * MiB, { windowBudget: budget, maxStreamWindow: 1 * MiB });
    const s = gateway.open(get('/big-list'));
    let received = 0;
    let reservedPeak = 0;
    s.on('data', (c: Buffer) => {
      received += c.length;
      reservedPeak = Math.max(reservedPeak, budget.reserved);
    });
    await new Promise((r) => s.on('end', r));
    expect(received).toBe(16 * MiB);
    // The window went from 64 KiB to the 1 MiB maximum: 960 KiB reserved, chunks of a quarter.
    expect(reservedPeak).toBe(1 * MiB - 64 * KiB);
    expect(Math.max(...chunkSizes)).toBe(256 * KiB);
    expect(Math.max(...chunkSizes)).toBeLessThanOrEqual(MAX_CHUNK_SIZE_LIMIT);
    await settle(link);
    expect(budget.reserved).toBe(0);
    expect(budget.outstanding).toBe(0);
  });

  it('never grows a stream whose reader falls behind', async () => {
    const budget = new WindowBudget(8 * MiB);
    const { gateway, link } = pair(undefined, { windowBudget: budget });
    const s = gateway.open(get('/watch'));
    await s.responseHead();
    // Nobody reads: the stream holds its initial window and asks for nothing more.
    await settle(link);
    expect(budget.reserved).toBe(0);
    expect(budget.outstanding).toBe(64 * KiB);
    s.destroy();
    await settle(link);
    expect(budget.outstanding).toBe(0);
  });

  it('never grows a stream whose reader reads, but slower than the data arrives', async () => {
    const budget = new WindowBudget(8 * MiB);
    const { gateway, link, chunkSizes } = pair(2 * MiB, { windowBudget: budget });
    const s = gateway.open(get('/slow-reader'));
    await s.responseHead();
    await settle(link);
    // One chunk per turn of the event loop, while the link keeps the window full.
    let read = 0;
    while (read < 2 * MiB) {
      const c = s.read(16 * KiB) as Buffer | null;
      if (c) read += c.length;
      else if (s.readableEnded) break;
      expect(budget.reserved).toBe(0);
      await new Promise((r) => setImmediate(r));
    }
    expect(read).toBe(2 * MiB);
    expect(Math.max(...chunkSizes)).toBe(16 * KiB);
    await settle(link);
  });

  it('keeps a session within its windows plus the budget when fast readers turn slow', async () => {
    const limit = 512 * KiB;
    const budget = new WindowBudget(limit);
    const { gateway, link } = pair(undefined, { windowBudget: budget, maxStreamWindow: 4 * MiB });
    const streams = Array.from({ length: 6 }, (_, i) => gateway.open(get(`/bulk/${i}`)));
    // Each reader keeps up for 2 MiB (its window may grow), then stops reading altogether.
    await Promise.all(
      streams.map(
        (s) =>
          new Promise<void>((resolve) => {
            let n = 0;
            s.on('data', (c: Buffer) => {
              n += c.length;
              if (n >= 2 * MiB) {
                s.pause();
                s.removeAllListeners('data');
                resolve();
              }
            });
          }),
      ),
    );
    // Every sender now runs into its window and stops; the link goes quiet.
    await settle(link);
    const bound = streams.length * 64 * KiB + limit;
    expect(budget.reserved).toBeGreaterThan(0);
    expect(budget.reserved).toBeLessThanOrEqual(limit);
    // Bytes held now, and at any moment before: received and not credited back.
    expect(budget.outstanding).toBeGreaterThan(streams.length * 32 * KiB);
    expect(budget.outstanding).toBeLessThanOrEqual(bound);
    expect(budget.peakOutstanding).toBeLessThanOrEqual(bound);
    for (const s of streams) s.destroy();
    await settle(link);
    expect(budget.outstanding).toBe(0);
    expect(budget.reserved).toBe(0);
  });

  it('holds several sessions within their own budgets and all of them within a shared process budget', async () => {
    const processBudget = new WindowBudget(1 * MiB);
    const sessions = [0, 1, 2].map(() => {
      const own = new WindowBudget(768 * KiB, processBudget);
      return { own, ...pair(undefined, { windowBudget: own, maxStreamWindow: 4 * MiB }) };
    });
    // Two bulk streams per session whose readers keep up for 2 MiB, then stop reading.
    const streams = sessions.flatMap(({ gateway }) => [0, 1].map((i) => gateway.open(get(`/bulk/${i}`))));
    let processPeak = 0;
    await Promise.all(
      streams.map(
        (s) =>
          new Promise<void>((resolve) => {
            let n = 0;
            s.on('data', (c: Buffer) => {
              n += c.length;
              processPeak = Math.max(processPeak, processBudget.reserved);
              if (n >= 2 * MiB) {
                s.pause();
                s.removeAllListeners('data');
                resolve();
              }
            });
          }),
      ),
    );
    for (const { link } of sessions) await settle(link);
    // Growth happened, never past either limit.
    expect(processPeak).toBeGreaterThan(0);
    expect(processPeak).toBeLessThanOrEqual(1 * MiB);
    for (const { own } of sessions) expect(own.reserved).toBeLessThanOrEqual(768 * KiB);
    expect(processBudget.reserved).toBe(sessions.reduce((n, { own }) => n + own.reserved, 0));
    // Buffered bytes are counted per session and, summed, for the process: bounded by the base
    // windows of all streams plus the process budget, however the sessions shared it.
    expect(processBudget.outstanding).toBe(sessions.reduce((n, { own }) => n + own.outstanding, 0));
    expect(processBudget.peakOutstanding).toBeLessThanOrEqual(streams.length * 64 * KiB + 1 * MiB);
    for (const s of streams) s.destroy();
    for (const { link } of sessions) await settle(link);
    expect([processBudget.reserved, processBudget.outstanding]).toEqual([0, 0]);
  });

  it('a budget with a parent: room is the least either has left, and what was granted without asking is counted too', () => {
    const parent = new WindowBudget(1 * MiB);
    const share = new WindowBudget(768 * KiB, parent);
    const other = new WindowBudget(768 * KiB, parent);
    expect(share.room).toBe(768 * KiB);
    expect(other.tryReserve(512 * KiB)).toBe(true);
    // The parent has 512 KiB left, the share all of its own.
    expect(share.room).toBe(512 * KiB);
    expect(share.tryReserve(640 * KiB)).toBe(false);
    // Reserved whatever the limits: counted here and in the parent, and no room is left.
    share.reserve(640 * KiB);
    expect([share.reserved, parent.reserved, share.room, other.room]).toEqual([640 * KiB, 1152 * KiB, 0, 0]);
    share.release(640 * KiB);
    other.release(512 * KiB);
    expect([share.reserved, parent.reserved, share.room]).toEqual([0, 0, 768 * KiB]);
    expect([share.peakReserved, parent.peakReserved]).toEqual([640 * KiB, 1152 * KiB]);
  });
});
