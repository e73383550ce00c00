import { acceptedFrame, type Frame, ResetCode, resetFrame } from '@pullplane/proto';
import {
  createMemoryLink,
  forEachFrame,
  type LogicalStream,
  Multiplexer,
  TunnelError,
  TunnelErrorCode,
} from '@pullplane/tunnel';
import { describe, expect, it } from 'vitest';
import { LinkStream } from '../src/index.js';

interface Unrouted {
  stream: LinkStream;
  reason: TunnelError;
  mayHaveReached: boolean;
}

/** A proxy-side multiplexer and a peer that records what it receives, over an in-memory link. */
function pair() {
  const link = createMemoryLink();
  const seen: Frame[] = [];
  const opened: LogicalStream[] = [];
  const proxy = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const peer = new Multiplexer({ sink: link.b, idParity: 'even', onStream: (s) => opened.push(s) });
  link.connect(
    (f) => proxy.receive(f),
    (f) => {
      forEachFrame(f, (x) => seen.push(x));
      peer.receive(f);
    },
  );
  return { link, proxy, peer, seen, opened };
}

/** A link stream whose trips back to the router are recorded. */
function linkStream(init: ConstructorParameters<typeof LinkStream>[0]) {
  const unrouted: Unrouted[] = [];
  const stream = new LinkStream(init, 64 * 1024, (s, reason, mayHaveReached) =>
    unrouted.push({ stream: s, reason, mayHaveReached }),
  );
  return { stream, unrouted };
}

const post = { head: { case: 'http' as const, value: { method: 'POST', path: '/', headers: [] } } };

describe('link streams (proxy links)', () => {
  it('sends what fits inline with the Open and holds the rest until Accepted', async () => {
    const { link, proxy, peer, seen, opened } = pair();
    const { stream: s } = linkStream({ ...post, hasBody: true });
    s.write(Buffer.from('first'));
    proxy.attach(s);
    await link.settle();
    s.write(Buffer.from('second'));
    await link.settle();
    // The Open carried the first write; the second waits.
    expect(seen.map((f) => f.kind.case)).toEqual(['open']);
    expect(Buffer.from(opened[0]!.open.body).toString()).toBe('first');
    peer.send(acceptedFrame(s.id));
    s.end();
    await link.settle();
    expect(seen.map((f) => f.kind.case)).toEqual(['open', 'data']);
    const body: Buffer[] = [];
    opened[0]!.on('data', (c: Buffer) => body.push(c));
    await link.settle();
    expect(Buffer.concat(body).toString()).toBe('firstsecond');
  });

  it('hands a refused stream back detached, and sends the same Open again elsewhere', async () => {
    const first = pair();
    const { stream: s, unrouted } = linkStream({ ...post, body: Buffer.from('whole body') });
    first.proxy.attach(s);
    await first.link.settle();
    expect(first.seen).toHaveLength(1);
    first.peer.send(resetFrame(s.id, ResetCode.NO_ROUTE, 'not here'));
    await first.link.settle();
    expect(unrouted).toEqual([
      {
        stream: s,
        reason: expect.objectContaining({ code: TunnelErrorCode.NOT_FOUND }),
        mayHaveReached: false,
      },
    ]);
    expect(s.destroyed).toBe(false);
    expect(first.proxy.activeStreams).toBe(0);

    const second = pair();
    second.proxy.attach(s);
    await second.link.settle();
    const [open] = second.seen;
    expect(open?.kind.case === 'open' && Buffer.from(open.kind.value.body).toString()).toBe('whole body');
    expect(open?.kind.case === 'open' && open.kind.value.hasBody).toBe(false);
    second.opened[0]!.respond(200);
    second.opened[0]!.end('ok');
    expect((await s.responseHead()).status).toBe(200);
  });

  it('does not hand back a stream that heard anything: a later NO_ROUTE fails it', async () => {
    const { link, proxy, peer, opened } = pair();
    const { stream: s, unrouted } = linkStream(post);
    proxy.attach(s);
    await link.settle();
    opened[0]!.respond(200);
    await link.settle();
    peer.send(resetFrame(s.id, ResetCode.NO_ROUTE, 'too late'));
    await link.settle();
    expect(unrouted).toEqual([]);
    expect(s.destroyed).toBe(true);
  });

  it('leaves a lost link with the Open sent (it may have reached the agent); an answered stream fails with it', async () => {
    const { link, proxy, opened } = pair();
    const waiting = linkStream(post);
    const answered = linkStream(post);
    proxy.attach(waiting.stream);
    proxy.attach(answered.stream);
    await link.settle();
    opened[1]!.respond(200);
    await link.settle();
    proxy.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'link lost'));
    expect(waiting.unrouted).toEqual([
      {
        stream: waiting.stream,
        reason: expect.objectContaining({ code: TunnelErrorCode.UNAVAILABLE }),
        mayHaveReached: true,
      },
    ]);
    expect(waiting.stream.destroyed).toBe(false);
    expect(answered.unrouted).toEqual([]);
    expect(answered.stream.destroyed).toBe(true);
  });

  it('is sent elsewhere when the link it waited for is lost, but fails when the gateway refused the link', async () => {
    const lost = linkStream(post);
    lost.stream.linkLost(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'gateway ended the link'), false);
    expect(lost.unrouted).toEqual([
      {
        stream: lost.stream,
        reason: expect.objectContaining({ code: TunnelErrorCode.UNAVAILABLE }),
        mayHaveReached: false,
      },
    ]);
    expect(lost.stream.destroyed).toBe(false);

    const refused = linkStream(post);
    refused.stream.linkLost(new TunnelError(TunnelErrorCode.REFUSED, 'authentication failed'), false);
    expect(refused.unrouted).toEqual([]);
    expect(refused.stream.destroyed).toBe(true);
    await expect(refused.stream.responseHead()).rejects.toMatchObject({
      code: TunnelErrorCode.REFUSED,
      message: 'authentication failed',
    });
  });
});
