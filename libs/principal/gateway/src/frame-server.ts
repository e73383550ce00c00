import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import { status } from '@grpc/grpc-js';
import { grpcMessageValue, TUNNEL_HTTP2_MAX_FRAME_SIZE, TUNNEL_HTTP2_WINDOW } from '@pullplane/grpc-frames';
import { MAX_TUNNEL_MESSAGE_BYTES } from '@pullplane/proto';
import { FrameCall } from './frame-call.js';

/**
 * Calls at once on one connection. An agent holds one tunnel (two while it moves), a proxy
 * replica a few links per gateway (`linksPerGateway`, 2 by default, one more while a link
 * retires by age): a peer that opens more is not one of ours.
 */
export const MAX_CALLS_PER_CONNECTION = 100;

/** What every session of a gateway listener advertises in its first SETTINGS frame. */
export const GATEWAY_HTTP2_SETTINGS: http2.Settings = {
  initialWindowSize: TUNNEL_HTTP2_WINDOW,
  maxFrameSize: TUNNEL_HTTP2_MAX_FRAME_SIZE,
  maxConcurrentStreams: MAX_CALLS_PER_CONNECTION,
};

export type CallHandler = (call: FrameCall) => void;

export interface FrameServerOptions {
  /** Method path → handler; any other path is answered UNIMPLEMENTED. */
  methods: ReadonlyMap<string, CallHandler>;
  /** A PING to each connection after this long (ms); no answer within the timeout closes it. */
  keepaliveTimeMs?: number;
  keepaliveTimeoutMs?: number;
  /** Memory one connection's HTTP/2 session may hold, in MiB. */
  maxSessionMemoryMb?: number;
  maxMessageBytes?: number;
}

/**
 * The gateway's gRPC server for bidi calls of Frames, on node:http2: one per listener, fed the
 * connections the listener accepted and authorised. It speaks gRPC's wire format (any gRPC
 * client can call it), but only the methods given, and only bidi streams of Frames.
 */
export class FrameServer {
  private readonly h2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly opts: Required<FrameServerOptions>;

  constructor(opts: FrameServerOptions) {
    this.opts = {
      keepaliveTimeMs: 30_000,
      keepaliveTimeoutMs: 10_000,
      maxSessionMemoryMb: 256,
      maxMessageBytes: MAX_TUNNEL_MESSAGE_BYTES,
      ...opts,
    };
    this.h2 = http2.createServer({
      settings: GATEWAY_HTTP2_SETTINGS,
      maxSessionMemory: this.opts.maxSessionMemoryMb,
    });
    this.h2.on('session', (session) => this.onSession(session));
    this.h2.on('stream', (stream, headers) => this.onStream(stream, headers));
  }

  /** Serves HTTP/2 on a connection the listener accepted (over TLS: negotiated `h2` by ALPN). */
  accept(socket: Duplex): void {
    this.h2.emit('connection', socket);
  }

  /** Asks every connection to finish its calls (GOAWAY); `destroy` cuts those still open. */
  drain(): void {
    for (const session of this.sessions) session.close();
  }

  /** Cuts every connection now. */
  destroy(): void {
    for (const session of this.sessions) session.destroy();
    this.h2.close();
  }

  private onSession(session: http2.ServerHttp2Session): void {
    this.sessions.add(session);
    try {
      // A setting cannot raise the connection window: without this every call on a connection
      // shares 64 KiB per round trip.
      session.setLocalWindowSize(TUNNEL_HTTP2_WINDOW);
    } catch {
      // A session already torn down: nothing to raise.
    }
    session.on('error', () => session.destroy());
    const { keepaliveTimeMs, keepaliveTimeoutMs } = this.opts;
    let timer: NodeJS.Timeout | undefined;
    const ping = () => {
      if (session.destroyed) return;
      timer = setTimeout(() => session.destroy(), keepaliveTimeoutMs);
      timer.unref();
      try {
        const sent = session.ping((err) => {
          clearTimeout(timer);
          if (err) session.destroy();
          else schedule();
        });
        if (!sent) session.destroy();
      } catch {
        session.destroy();
      }
    };
    const schedule = () => {
      if (session.destroyed || keepaliveTimeMs <= 0) return;
      timer = setTimeout(ping, keepaliveTimeMs);
      timer.unref();
    };
    schedule();
    session.once('close', () => {
      clearTimeout(timer);
      this.sessions.delete(session);
    });
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    const contentType = headers['content-type'];
    if (
      headers[':method'] !== 'POST' ||
      typeof contentType !== 'string' ||
      !/^application\/grpc([+;].*)?$/.test(contentType)
    ) {
      // Not gRPC: answered as grpc-js answers it.
      stream.on('error', () => undefined);
      stream.respond(
        {
          ':status': 415,
          'grpc-status': String(status.UNKNOWN),
          'grpc-message': grpcMessageValue(`Unsupported content-type ${String(contentType)}`),
        },
        { endStream: true },
      );
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    const path = headers[':path'] ?? '';
    const call = new FrameCall(stream, headers, this.opts.maxMessageBytes);
    const handler = this.opts.methods.get(path);
    if (handler) handler(call);
    else call.refuse(status.UNIMPLEMENTED, `The server does not implement the method ${path}`);
  }
}
