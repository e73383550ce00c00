import {
  dataFrame,
  decodeFrame,
  encodeFrame,
  type Frame,
  frame,
  MAX_CHUNK_BYTES,
  MAX_RESET_MESSAGE_CHARS,
  MAX_RESPONSE_HEADER_BYTES_LIMIT,
  MAX_TUNNEL_MESSAGE_BYTES,
  ResetCode,
  resetFrame,
  responseHeadFrame,
  streamIdOf,
  windowUpdateFrame,
} from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import { FrameBatcher, type FrameTransport } from '../src/index.js';
import { flatten } from './support.js';

/** A transport that encodes every message as gRPC would and keeps what it wrote. */
function recordingTransport() {
  const messages: Buffer[] = [];
  let closed = false;
  let onClose: (() => void) | undefined;
  const pending: Array<() => void> = [];
  const transport: FrameTransport = {
    get closed() {
      return closed;
    },
    needsDrain: false,
    write(message, done) {
      messages.push(encodeFrame(message));
      if (done) pending.push(done);
      return true;
    },
    drained: () => Promise.resolve(),
    onClose(cb) {
      onClose = cb;
    },
  };
  return {
    transport,
    messages,
    /** Completes every write handed over so far. */
    complete: () => {
      for (const done of pending.splice(0)) done();
    },
    fail: () => {
      closed = true;
      onClose?.();
    },
  };
}

// The longest stream id: its varint is as long as any.
const MAX_ID = 0xffff_fffd;
// Three UTF-8 bytes per character: the most a decoded header character can cost again.
const WIDE = '\u20ac';

/** A head at every limit an agent is held to: header characters and, if `inline`, a whole chunk. */
function largestHead(id: number, wide: boolean, inline = true): Frame {
  const headers = [];
  const per = Math.floor(MAX_RESPONSE_HEADER_BYTES_LIMIT / 8);
  for (let i = 0; i < 8; i++)
    headers.push({ name: `x-h${i}`, value: (wide ? WIDE : 'v').repeat(per - `x-h${i}`.length) });
  const f = responseHeadFrame(id, 200, headers);
  if (inline && f.kind.case === 'responseHead') f.kind.value.body = Buffer.alloc(MAX_CHUNK_BYTES, 1);
  return f;
}

/** Every kind of frame any side may produce, each as large as it may be. */
const makers: Array<(id: number) => Frame> = [
  (id) => largestHead(id, true),
  (id) => largestHead(id, false),
  // Headers alone: the batch grows by what the headers take, not by any body.
  (id) => largestHead(id, true, false),
  (id) => largestHead(id, false, false),
  (id) => dataFrame(id, Buffer.alloc(MAX_CHUNK_BYTES, 2), true),
  (id) => dataFrame(id, Buffer.alloc(17, 3)),
  (id) => resetFrame(id, ResetCode.PROTOCOL, WIDE.repeat(MAX_RESET_MESSAGE_CHARS)),
  (id) => windowUpdateFrame(id, 0xffff_ffff),
  (id) => frame({ case: 'end', value: { streamId: id } }),
  (id) =>
    frame({
      case: 'open',
      value: {
        streamId: id,
        agent: 'agent-a',
        hasBody: true,
        body: Buffer.alloc(MAX_CHUNK_BYTES, 4),
        head: {
          case: 'http',
          value: { method: 'GET', path: `/${'p'.repeat(64 * 1024)}`, headers: [{ name: 'a', value: 'b' }] },
        },
      },
    }),
];

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

describe('every message fits the receiver', () => {
  it('splits any mix of the largest frames of every kind into messages under the peer limit, in order', async () => {
    const rnd = random(20261126);
    for (let round = 0; round < 16; round++) {
      const { transport, messages } = recordingTransport();
      const batcher = new FrameBatcher(transport);
      const sent: Frame[] = [];
      const count = 2 + Math.floor(rnd() * 16);
      for (let i = 0; i < count; i++) {
        const f = makers[Math.floor(rnd() * makers.length)]!(MAX_ID - 2 * Math.floor(rnd() * 4));
        sent.push(f);
        batcher.send(f);
      }
      batcher.flush();
      const received = messages.flatMap((m) => {
        expect(m.byteLength).toBeLessThanOrEqual(MAX_TUNNEL_MESSAGE_BYTES);
        return flatten(decodeFrame(m));
      });
      expect(received.map((f) => `${f.kind.case}:${streamIdOf(f)}`)).toEqual(
        sent.map((f) => `${f.kind.case}:${streamIdOf(f)}`),
      );
    }
  });

  it('measures a frame as it is when flushed, after its sender amended it', () => {
    const { transport, messages } = recordingTransport();
    const batcher = new FrameBatcher(transport);
    // Queued small, then given a whole chunk inline, as a stream does with a head not yet written.
    const heads = [1, 3, 5, 7, 9].map((id) => responseHeadFrame(id, 200, []));
    for (const h of heads) batcher.send(h);
    for (const h of heads)
      if (h.kind.case === 'responseHead') h.kind.value.body = Buffer.alloc(MAX_CHUNK_BYTES);
    batcher.flush();
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(m.byteLength).toBeLessThanOrEqual(MAX_TUNNEL_MESSAGE_BYTES);
    expect(messages.flatMap((m) => flatten(decodeFrame(m))).map(streamIdOf)).toEqual([1, 3, 5, 7, 9]);
  });

  it('sends a Reset in place of a frame no message could carry, and tells the owner', () => {
    const { transport, messages } = recordingTransport();
    const batcher = new FrameBatcher(transport);
    const oversize: Array<[number | undefined, number]> = [];
    batcher.onOversize = (f, bytes) => oversize.push([streamIdOf(f), bytes]);
    const huge = responseHeadFrame(5, 200, [{ name: 'x', value: 'v'.repeat(MAX_TUNNEL_MESSAGE_BYTES) }]);
    batcher.send(dataFrame(3, Buffer.from('before')));
    batcher.send(huge);
    batcher.send(dataFrame(3, Buffer.from('after')));
    batcher.flush();
    const frames = messages.flatMap((m) => flatten(decodeFrame(m)));
    expect(frames.map((f) => `${f.kind.case}:${streamIdOf(f)}`)).toEqual(['data:3', 'reset:5', 'data:3']);
    const reset = frames[1]!.kind;
    expect(reset.case === 'reset' && reset.value.message).toMatch(/exceeds the tunnel's message limit/);
    expect(oversize).toHaveLength(1);
    expect(oversize[0]![0]).toBe(5);
    expect(oversize[0]![1]).toBeGreaterThan(MAX_TUNNEL_MESSAGE_BYTES);
  });

  it('runs the after-write callbacks once the messages are written, or at once when the transport fails', () => {
    const t = recordingTransport();
    const batcher = new FrameBatcher(t.transport);
    const ran: string[] = [];
    batcher.afterWrite(() => ran.push('first'));
    batcher.send(dataFrame(1, Buffer.alloc(MAX_CHUNK_BYTES)));
    batcher.flush();
    expect(ran).toEqual([]);
    t.complete();
    expect(ran).toEqual(['first']);

    batcher.afterWrite(() => ran.push('second'));
    batcher.send(dataFrame(1, Buffer.alloc(10)));
    batcher.flush();
    // The transport dies with the message still queued: its bytes are no longer held by anyone.
    t.fail();
    expect(ran).toEqual(['first', 'second']);
    t.complete();
    expect(ran).toEqual(['first', 'second']);

    // Sent after it closed: dropped, and counted as written.
    batcher.afterWrite(() => ran.push('third'));
    batcher.send(dataFrame(1, Buffer.alloc(10)));
    expect(ran).toEqual(['first', 'second', 'third']);
  });
});

describe('one message per event-loop turn', () => {
  it('sends frames from separate callbacks of one turn (several sockets read in one poll) as one message', async () => {
    const { transport, messages } = recordingTransport();
    const batcher = new FrameBatcher(transport);
    // Two callbacks of one phase, as two sockets' reads are: microtasks run between them, so a
    // batcher flushing on a microtask would write two messages.
    let writtenWithinTheTurn = -1;
    await new Promise<void>((resolve) => {
      setImmediate(() => batcher.send(dataFrame(1, Buffer.from('first'))));
      setImmediate(() => {
        batcher.send(dataFrame(3, Buffer.from('second')));
        writtenWithinTheTurn = messages.length;
        setImmediate(() => setImmediate(resolve));
      });
    });
    expect(writtenWithinTheTurn).toBe(0);
    expect(messages).toHaveLength(1);
    expect(flatten(decodeFrame(messages[0]!)).map(streamIdOf)).toEqual([1, 3]);
  });
});
