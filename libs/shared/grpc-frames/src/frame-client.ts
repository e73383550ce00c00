import http2 from 'node:http2';
import { Metadata, status } from '@grpc/grpc-js';
import { MAX_TUNNEL_MESSAGE_BYTES } from '@pullplane/proto';
import { type FrameCallHandlers, FrameClientCall } from './frame-client-call.js';
import type { TunnelCredentials } from './tunnel-credentials.js';

/** HTTP/2 receive window per stream, and for the whole connection, on both ends of a tunnel or link. */
export const TUNNEL_HTTP2_WINDOW = 4 * 1024 * 1024;
/** Largest HTTP/2 frame either end accepts (a tunnel chunk is up to 1 MiB). */
export const TUNNEL_HTTP2_MAX_FRAME_SIZE = 1024 * 1024;

export interface FrameClientOptions {
  /** `host:port`, `[v6]:port`, or the same after `dns:` / `dns:///` as gRPC targets are written. */
  target: string;
  credentials: TunnelCredentials;
  /** Name to verify in the server's certificate (and send as SNI) instead of the target's host. */
  serverNameOverride?: string | undefined;
  /** A PING after this long on each connection (ms), whether or not calls are open; 0: none. */
  keepAliveIntervalMs?: number | undefined;
  /** No PING answer within this long closes the connection and fails its calls. */
  keepAliveTimeoutMs?: number | undefined;
  /** Memory one connection's HTTP/2 session may hold, in MiB. */
  maxSessionMemoryMb?: number | undefined;
  /**
   * A connection not up (TCP, TLS and the server's SETTINGS) within this long is abandoned and
   * its calls end UNAVAILABLE; without it a dropped SYN would hold them for the OS's minutes.
   */
  connectTimeoutMs?: number | undefined;
  maxMessageBytes?: number | undefined;
  /** Sent as user-agent. */
  userAgent?: string | undefined;
}

/** host and port of a gRPC target. */
export function parseTarget(target: string): { host: string; port: number } {
  const bare = target.replace(/^dns:(\/\/[^/]*\/)?/, '');
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(bare);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port < 1 || port > 65_535)
    throw new Error(`gRPC target ${JSON.stringify(target)} is not host:port`);
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * A gRPC client of bidi Frame calls on node:http2, for the agent's tunnel and the proxies' links:
 * gRPC's framing written by us, so a relayed payload leaves as the view it came in and arrives
 * as a view of its HTTP/2 chunk. One connection at a time, dialled when a call needs one and
 * none is usable (never before, so a dead server costs nothing until a call is made); a
 * connection the server sent GOAWAY on finishes its calls while new ones go to a fresh one.
 */
export class FrameClient {
  private session: http2.ClientHttp2Session | undefined;
  private closed = false;
  private readonly origin: string;
  private readonly host: string;

  constructor(private readonly opts: FrameClientOptions) {
    const { host, port } = parseTarget(opts.target);
    this.host = host;
    this.origin = `${opts.credentials.secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  /** Opens a call of `path` with `metadata`; its outcome, even a failure to connect, reaches `handlers.onEnd`. */
  call(path: string, metadata: Metadata | undefined, handlers: FrameCallHandlers): FrameClientCall {
    const maxMessageBytes = this.opts.maxMessageBytes ?? MAX_TUNNEL_MESSAGE_BYTES;
    if (this.closed)
      return FrameClientCall.failed(
        { code: status.UNAVAILABLE, details: 'the client was closed' },
        maxMessageBytes,
        handlers,
      );
    let stream: http2.ClientHttp2Stream;
    try {
      stream = this.usableSession().request(
        {
          // Metadata first: none of its keys may replace what makes this a gRPC call.
          ...(metadata ?? new Metadata()).toHttp2Headers(),
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc',
          te: 'trailers',
          'user-agent': this.opts.userAgent ?? 'pullplane',
        },
        { endStream: false },
      );
    } catch (err) {
      return FrameClientCall.failed(
        { code: status.UNAVAILABLE, details: `could not open a call to ${this.opts.target}: ${String(err)}` },
        maxMessageBytes,
        handlers,
      );
    }
    return new FrameClientCall(stream, maxMessageBytes, handlers);
  }

  /** No new calls; the connection closes once its calls are done. */
  close(): void {
    this.closed = true;
    this.session?.close();
    this.session = undefined;
  }

  /** Ends the connection and every call on it now. */
  destroy(): void {
    this.closed = true;
    this.session?.destroy();
    this.session = undefined;
  }

  private usableSession(): http2.ClientHttp2Session {
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    const session = this.dial();
    this.session = session;
    return session;
  }

  private dial(): http2.ClientHttp2Session {
    const o = this.opts;
    const security = o.credentials.forConnection();
    const servername = o.serverNameOverride ?? (isIp(this.host) ? undefined : this.host);
    const session = http2.connect(this.origin, {
      settings: {
        initialWindowSize: TUNNEL_HTTP2_WINDOW,
        maxFrameSize: TUNNEL_HTTP2_MAX_FRAME_SIZE,
        enablePush: false,
      },
      maxSessionMemory: o.maxSessionMemoryMb ?? 256,
      ...(security
        ? {
            secureContext: security.secureContext,
            rejectUnauthorized: security.rejectUnauthorized,
            ALPNProtocols: ['h2'],
            ...(servername ? { servername } : {}),
          }
        : {}),
    });
    // Errors reach each call through its stream's close; the session's own must not throw.
    session.on('error', () => undefined);
    // Told to go: its calls finish on it, new ones dial afresh.
    session.on('goaway', () => {
      if (this.session === session) this.session = undefined;
    });
    const connectTimeoutMs = o.connectTimeoutMs ?? 20_000;
    const notConnected = setTimeout(
      () => session.destroy(new Error(`no connection to ${o.target} within ${connectTimeoutMs} ms`)),
      connectTimeoutMs,
    );
    notConnected.unref();
    session.once('close', () => clearTimeout(notConnected));
    session.once('connect', () => {
      clearTimeout(notConnected);
      // 'connect' is emitted a tick after the handshake: the client may have been destroyed
      // (stopped, or its call given up) in between, and a destroyed session throws on use.
      if (session.destroyed || session.closed) return;
      // The connection window is separate from the stream windows SETTINGS sets.
      session.setLocalWindowSize(TUNNEL_HTTP2_WINDOW);
      this.keepAlive(session);
    });
    session.once('close', () => {
      if (this.session === session) this.session = undefined;
    });
    return session;
  }

  private keepAlive(session: http2.ClientHttp2Session): void {
    const every = this.opts.keepAliveIntervalMs ?? 0;
    if (every <= 0) return;
    const timeoutMs = this.opts.keepAliveTimeoutMs ?? 10_000;
    const timer = setInterval(() => {
      if (session.destroyed) return;
      const deadline = setTimeout(
        () => session.destroy(new Error(`no PING answer from ${this.opts.target} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      deadline.unref();
      const sent = session.ping((err) => {
        clearTimeout(deadline);
        if (err && !session.destroyed) session.destroy(err);
      });
      if (!sent) clearTimeout(deadline);
    }, every);
    timer.unref();
    session.once('close', () => clearInterval(timer));
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
