import {
  dataFrame,
  endFrame,
  type Frame,
  frame,
  MAX_CHUNK_BYTES,
  MAX_TUNNEL_MESSAGE_BYTES,
  type Open,
  responseHeadFrame,
} from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import {
  type AbortCause,
  createMemoryLink,
  type LogicalStream,
  Multiplexer,
  type PeerViolation,
  type StreamEntry,
  TunnelError,
  TunnelErrorCode,
} from '../src/index.js';
import { flatten } from './support.js';

/** An entry that records what its multiplexer hands it. */
function recorder() {
  const frames: Frame[] = [];
  const aborts: Array<{ code: string; cause: AbortCause }> = [];
  const entry: StreamEntry = {
    receive: (f) => frames.push(f),
    abort: (err, cause) => aborts.push({ code: err.code, cause }),
  };
  return { entry, frames, aborts };
}

const get = { head: { case: 'http' as const, value: { method: 'GET', path: '/', headers: [] } } };

function openFrame(id: number): Frame {
  return frame({ case: 'open', value: { streamId: id, ...get } });
}

/** A multiplexer whose peer is the test: what it sends is recorded, what the test sends is fed in. */
function endpoint(opts: Partial<ConstructorParameters<typeof Multiplexer>[0]> = {}) {
  const link = createMemoryLink();
  const mux = new Multiplexer({ sink: link.a, idParity: 'odd', ...opts });
  const sent: Frame[] = [];
  link.connect(
    (f) => mux.receive(f),
    (f) => sent.push(...flatten(f)),
  );
  const violations: PeerViolation[] = [];
  mux.on('violation', (v) => violations.push(v));
  return { link, mux, sent, violations, peer: link.b };
}

describe("a multiplexer's stream table", () => {
  it('gives claimed ids of its own parity to entries, hands them their frames, and drops frames once released', async () => {
    const { link, mux, peer } = endpoint();
    const a = recorder();
    const b = recorder();
    const own = mux.open(get);
    const idA = mux.claim(a.entry);
    const idB = mux.claim(b.entry);
    expect([own.id, idA, idB]).toEqual([1, 3, 5]);
    expect(mux.activeStreams).toBe(3);
    peer.send(dataFrame(idA, Buffer.from('to a')));
    peer.send(endFrame(idB));
    await link.settle();
    expect(a.frames.map((f) => f.kind.case)).toEqual(['data']);
    expect(b.frames.map((f) => f.kind.case)).toEqual(['end']);

    // Releasing with another entry leaves the id alone; with its own, the id is free again.
    mux.release(idA, b.entry);
    expect(mux.activeStreams).toBe(3);
    mux.release(idA, a.entry);
    expect(mux.activeStreams).toBe(2);
    peer.send(dataFrame(idA, Buffer.from('late')));
    await link.settle();
    expect(a.frames).toHaveLength(1);
  });

  it("hands the peer's opens to `onOpen`, whose entries then get the stream's frames", async () => {
    const opens: Open[] = [];
    const entry = recorder();
    const { link, mux, peer } = endpoint({
      idParity: 'even',
      onOpen: (open) => {
        opens.push(open);
        mux.claimPeerId(open.streamId, entry.entry);
      },
    });
    peer.send(openFrame(7));
    peer.send(dataFrame(7, Buffer.from('body')));
    await link.settle();
    expect(opens.map((o) => o.streamId)).toEqual([7]);
    expect(entry.frames.map((f) => f.kind.case)).toEqual(['data']);
    // An Open for an id in use goes to whoever holds it.
    peer.send(openFrame(7));
    await link.settle();
    expect(opens).toHaveLength(1);
    expect(entry.frames.map((f) => f.kind.case)).toEqual(['data', 'open']);
  });

  it('counts claims against the concurrency cap and refuses them once closed or going away', () => {
    const { mux } = endpoint({ maxConcurrentStreams: 2 });
    mux.claim(recorder().entry);
    mux.open(get);
    expect(() => mux.claim(recorder().entry)).toThrow(/too many concurrent streams/);
    const other = endpoint().mux;
    other.goAway('moving', 1_000);
    expect(() => other.claim(recorder().entry)).toThrow(
      expect.objectContaining({ code: TunnelErrorCode.GOING_AWAY }),
    );
    other.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'gone'));
    expect(() => other.claim(recorder().entry)).toThrow('gone');
  });

  it('aborts every entry, its own streams and claimed ones, when the transport closes', () => {
    const { mux } = endpoint();
    const claimed = recorder();
    mux.claim(claimed.entry);
    const own: LogicalStream = mux.open({ ...get, hasBody: true });
    mux.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'transport gone'));
    expect(claimed.aborts).toEqual([{ code: TunnelErrorCode.UNAVAILABLE, cause: 'closed' }]);
    expect(own.destroyed).toBe(true);
    expect(mux.activeStreams).toBe(0);
  });

  it('aborts and forgets an entry whose frame no message could carry', async () => {
    const { link, mux, sent } = endpoint();
    const claimed = recorder();
    const id = mux.claim(claimed.entry);
    mux.send(responseHeadFrame(id, 200, [{ name: 'x', value: 'v'.repeat(MAX_TUNNEL_MESSAGE_BYTES) }]));
    await link.settle();
    expect(claimed.aborts).toEqual([{ code: TunnelErrorCode.INTERNAL, cause: 'oversize' }]);
    expect(mux.activeStreams).toBe(0);
    expect(sent.map((f) => f.kind.case)).toEqual(['reset']);
  });

  it("checks an untrusted peer's frames for claimed ids too: a breach aborts the entry as a violation", async () => {
    const { link, mux, peer, violations } = endpoint({ peerLimits: { maxHeaders: 4, maxHeaderBytes: 1024 } });
    const claimed = recorder();
    const id = mux.claim(claimed.entry);
    peer.send(dataFrame(id, Buffer.alloc(MAX_CHUNK_BYTES + 1)));
    await link.settle();
    expect(claimed.frames).toEqual([]);
    expect(claimed.aborts).toEqual([{ code: TunnelErrorCode.PROTOCOL, cause: 'violation' }]);
    expect(violations.map((v) => [v.kind, v.streamId])).toEqual([['oversized-frame', id]]);
    // A frame for an id of ours never claimed nor opened is the peer's invention.
    peer.send(dataFrame(id + 2, Buffer.from('x')));
    await link.settle();
    expect(violations.map((v) => [v.kind, v.streamId])).toEqual([
      ['oversized-frame', id],
      ['unknown-stream', id + 2],
    ]);
  });

  it('runs a frame’s after-write callback once the transport wrote it, or at once when it is closed', async () => {
    const { link, mux } = endpoint();
    const written: string[] = [];
    mux.send(dataFrame(1, Buffer.from('x')), () => written.push('first'));
    expect(written).toEqual([]);
    await link.settle();
    expect(written).toEqual(['first']);
    mux.close();
    mux.send(dataFrame(1, Buffer.from('y')), () => written.push('after close'));
    expect(written).toEqual(['first', 'after close']);
  });
});
