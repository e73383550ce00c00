import { acceptedFrame, type Frame, ResetCode, resetFrame } from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import {
  createMemoryLink,
  detachedStream,
  type LogicalStream,
  Multiplexer,
  type TunnelError,
} from '../src/index.js';
import { flatten, settle } from './support.js';

/** A proxy-side multiplexer and a peer that records what it receives, over an in-memory link. */
function pair(onUnrouted?: (s: LogicalStream, reason: TunnelError) => void) {
  const link = createMemoryLink();
  const seen: Frame[] = [];
  const opened: LogicalStream[] = [];
  const proxy = new Multiplexer({ sink: link.a, role: 'gateway', onUnrouted });
  const peer = new Multiplexer({ sink: link.b, role: 'agent', onStream: (s) => opened.push(s) });
  link.connect(
    (f) => proxy.receive(f),
    (f) => {
      seen.push(...flatten(f));
      peer.receive(f);
    },
  );
  return { link, proxy, peer, seen, opened };
}

const post = { head: { case: 'http' as const, value: { method: 'POST', path: '/', headers: [] } } };

describe('detached streams (proxy links)', () => {
  it('sends what fits inline with the Open and holds the rest until Accepted', async () => {
    const { link, proxy, peer, seen, opened } = pair();
    const s = detachedStream({ ...post, hasBody: true }, 64 * 1024);
    s.write(Buffer.from('first'));
    proxy.adoptStream(s);
    await settle(link);
    s.write(Buffer.from('second'));
    await settle(link);
    // The Open carried the first write; the second waits.
    expect(seen.map((f) => f.kind.case)).toEqual(['open']);
    expect(Buffer.from(opened[0]!.open.body).toString()).toBe('first');
    peer.send(acceptedFrame(s.id));
    s.end();
    await settle(link);
    expect(seen.map((f) => f.kind.case)).toEqual(['open', 'data']);
    const body: Buffer[] = [];
    opened[0]!.on('data', (c: Buffer) => body.push(c));
    await settle(link);
    expect(Buffer.concat(body).toString()).toBe('firstsecond');
  });

  it('hands a refused stream back detached, and sends the same Open again elsewhere', async () => {
    const refused: LogicalStream[] = [];
    const first = pair((s) => refused.push(s));
    const s = detachedStream({ ...post, body: Buffer.from('whole body') }, 64 * 1024);
    first.proxy.adoptStream(s);
    await settle(first.link);
    expect(first.seen).toHaveLength(1);
    first.peer.send(resetFrame(s.id, ResetCode.NO_ROUTE, 'not here'));
    await settle(first.link);
    expect(refused).toEqual([s]);
    expect(s.destroyed).toBe(false);
    expect(first.proxy.activeStreams).toBe(0);

    const second = pair();
    second.proxy.adoptStream(s);
    await settle(second.link);
    const [open] = second.seen;
    expect(open?.kind.case === 'open' && Buffer.from(open.kind.value.body).toString()).toBe('whole body');
    expect(open?.kind.case === 'open' && open.kind.value.hasBody).toBe(false);
    second.opened[0]!.respond(200);
    second.opened[0]!.end('ok');
    expect((await s.responseHead()).status).toBe(200);
  });

  it('does not hand back a stream that heard anything: a later NO_ROUTE fails it', async () => {
    const refused: LogicalStream[] = [];
    const { link, proxy, peer, opened } = pair((s) => refused.push(s));
    const s = detachedStream(post, 64 * 1024);
    proxy.adoptStream(s);
    await settle(link);
    opened[0]!.respond(200);
    await settle(link);
    peer.send(resetFrame(s.id, ResetCode.NO_ROUTE, 'too late'));
    await settle(link);
    expect(refused).toEqual([]);
    expect(s.destroyed).toBe(true);
  });
});
