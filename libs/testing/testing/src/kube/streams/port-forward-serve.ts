import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { KubeObject } from '../types.js';
import { ForwardError, type PortForwarder, splice } from './port-forward.js';
import { headerValue } from './spdy-header-codec.js';
import type { SpdySession, SpdyStream } from './spdy-session.js';
import type { StreamSession } from './stream-sessions.js';
import { ChannelConnection } from './ws-channels.js';

export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
/** WebSocket subprotocols of the kubelet's own port-forward channel protocol ("" = none asked for). */
export const PORT_FORWARD_WS_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/**
 * Port forwarding over a SPDY session (direct, or tunnelled through a WebSocket), as the kubelet
 * serves it: the client opens an error and a data stream per connection, tied by `requestID` and
 * naming the `port`; each complete pair is one connection to the pod's port. A failure is written
 * on the error stream; both streams are half-closed when the connection ends.
 */
export function servePortForwardSpdy(
  session: SpdySession,
  pod: KubeObject,
  forwarder: PortForwarder,
  record: StreamSession,
  streamCreationTimeoutMs: number,
): Promise<void> {
  const pairs = new Map<string, Pair>();
  const sockets = new Set<Socket>();
  const forward = async (pair: Pair) => {
    const data = pair.data!;
    const error = pair.error!;
    const port = Number(headerValue(data.headers, 'port') ?? '0');
    if (!record.ports.includes(port)) record.ports.push(port);
    record.connections++;
    let socket: Socket;
    try {
      socket = await forwarder.connect(pod, Number.isInteger(port) ? port : 0);
    } catch (err) {
      if (!(err instanceof ForwardError)) throw err;
      error.end(err.message);
      data.end();
      return;
    }
    sockets.add(socket);
    await splice(data, socket);
    sockets.delete(socket);
    error.end();
  };
  const requestId = (stream: SpdyStream, type: string) => {
    const id = headerValue(stream.headers, 'requestid');
    if (id !== undefined) return id;
    // Clients before requestID: the data stream follows its error stream (ids two apart).
    return String(type === 'error' ? stream.id : stream.id - 2);
  };
  session.on('stream', (stream: SpdyStream) => {
    stream.reply();
    stream.on('error', () => {});
    const type = headerValue(stream.headers, 'streamtype') ?? '';
    const id = requestId(stream, type);
    let pair = pairs.get(id);
    if (!pair) {
      const fresh: Pair = {
        timer: setTimeout(() => {
          pairs.delete(id);
          fresh.error?.end(`(conn=${record.id}, request=${id}) timed out waiting for streams`);
          fresh.data?.end();
        }, streamCreationTimeoutMs),
      };
      pair = fresh;
      pairs.set(id, pair);
    }
    if (type !== 'data' && type !== 'error') {
      pair.error?.end(`error processing stream for request ${id}: unexpected stream type "${type}"`);
      stream.end();
      return;
    }
    if (pair[type]) {
      pair.error?.end(`error processing stream for request ${id}: ${type} stream already assigned`);
      stream.end();
      return;
    }
    pair[type] = stream;
    if (pair.data && pair.error) {
      clearTimeout(pair.timer);
      pairs.delete(id);
      const complete = pair;
      void forward(complete).catch(() => complete.data?.destroy());
    }
  });
  return session.closed.then(() => {
    for (const pair of pairs.values()) clearTimeout(pair.timer);
    for (const socket of sockets) socket.destroy();
  });
}

/**
 * The kubelet's WebSocket port forwarding: one data and one error channel per requested port
 * (channels 2i and 2i+1), each opened with the port as two little-endian bytes, one connection per
 * port; the socket closes once every port's connection has ended.
 */
export async function servePortForwardWebSocket(
  ws: WebSocket,
  protocol: string,
  ports: number[],
  pod: KubeObject,
  forwarder: PortForwarder,
  record: StreamSession,
): Promise<void> {
  const conn = new ChannelConnection(ws, {
    base64: protocol.includes('base64'),
    streamClose: false,
    channelCount: ports.length * 2,
    readableChannels: ports.map((_, i) => i * 2),
  });
  const sockets = new Set<Socket>();
  void conn.closed.then(() => {
    for (const s of sockets) s.destroy();
  });
  await Promise.all(
    ports.map(async (port, i) => {
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16LE(port);
      conn.send(i * 2, portBytes);
      conn.send(i * 2 + 1, portBytes);
      record.connections++;
      let socket: Socket;
      try {
        socket = await forwarder.connect(pod, port);
      } catch (err) {
        if (!(err instanceof ForwardError)) throw err;
        conn.send(i * 2 + 1, Buffer.from(err.message));
        return;
      }
      sockets.add(socket);
      const input = conn.input(i * 2);
      const output = conn.output(i * 2);
      input.pipe(socket);
      socket.pipe(output, { end: false });
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
      sockets.delete(socket);
    }),
  );
  conn.close();
}
