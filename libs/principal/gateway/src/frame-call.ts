import http2 from 'node:http2';
import { type PeerCertificate, TLSSocket } from 'node:tls';
import { Metadata, status } from '@grpc/grpc-js';
import { grpcMessageValue, writeGrpcMessage } from '@pullplane/grpc-frames';
import {
  decodeFrame,
  type Frame,
  GrpcDeframer,
  type GrpcMessageError,
  MAX_TUNNEL_MESSAGE_BYTES,
} from '@pullplane/proto';
import { FrameBatcher, type FrameSink, writableFrameTransport } from '@pullplane/tunnel';
import type { CallContext, ConnectionLookup } from './caller-auth.js';

/** How a call ended: the caller half-closed, cancelled it, it failed, or the stream closed. */
export type CallEnd = 'ended' | 'cancelled' | 'failed' | 'closed';

/** Headers of gRPC's transport, not metadata of the call. */
const TRANSPORT_HEADERS = [
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'accept-encoding',
  'te',
  'content-type',
];

/** How long a caller may keep sending after it was answered before its stream is reset. */
const ANSWERED_GRACE_MS = 1_000;

/** The peer address as the listener keys its connections: `host:port`. */
export function remoteOf(socket: {
  remoteAddress?: string | undefined;
  remotePort?: number | undefined;
}): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

/**
 * A gRPC bidi call of Frames as the gateway serves it (AgentTunnel.Connect, GatewayForward.Link,
 * and the methods a listener refuses), on one HTTP/2 stream: gRPC's framing is ours, so a
 * relayed payload goes out as the view it came in, with no copy of our own and none behind a
 * library's prefix. The agent session, the link service and the tunnel service see frames in,
 * a sink for frames out, and one end.
 */
export class FrameCall {
  /** Frames out: each turn's frames leave as one gRPC message. */
  readonly sink: FrameSink;
  readonly remote: string;
  private readonly deframer: GrpcDeframer;
  private metadataCache: Metadata | undefined;
  private headersSent = false;
  /** Our side is answered (status sent or queued): nothing more is written. */
  private answered = false;
  /** Answered with an error status: nothing more is read. */
  private refused = false;
  private onFrame: ((f: Frame) => void) | undefined;
  private onEnd: ((how: CallEnd, err?: Error) => void) | undefined;
  /** Frames that arrived before `serve` (the stream is paused meanwhile). */
  private readonly early: Frame[] = [];
  private ends: Array<[CallEnd, Error | undefined]> = [];
  private waiter: ((f: Frame | undefined) => void) | undefined;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: http2.IncomingHttpHeaders,
    maxMessageBytes = MAX_TUNNEL_MESSAGE_BYTES,
  ) {
    const socket = stream.session?.socket;
    this.remote = socket ? remoteOf(socket) : 'unknown';
    this.sink = new FrameBatcher(
      writableFrameTransport(stream, (message, done) => this.writeMessage(message, done)),
    );
    this.deframer = new GrpcDeframer({
      maxMessageBytes,
      onMessage: (bytes) => this.onMessage(bytes),
      onError: (err) => this.onFramingError(err),
    });
    stream.pause();
    stream.on('data', (chunk: Buffer) => this.deframer.push(chunk));
    stream.on('end', () => {
      if (this.deframer.atBoundary) this.ended('ended');
      else this.fail(status.INTERNAL, 'the call ended inside a message');
    });
    stream.on('error', (err: Error) => this.ended('failed', err));
    stream.on('close', () => {
      // A reset from the caller before it half-closed is a cancellation, as grpc-js reports it.
      if (!stream.readableEnded && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR)
        this.ended('cancelled');
      this.ended('closed');
    });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(status.OK) }));
  }

  /** The call's metadata as grpc-js's server presents it (authenticators read it). */
  get metadata(): Metadata {
    if (!this.metadataCache) {
      const md = Metadata.fromHttp2Headers(this.headers);
      // The transport's own headers, as grpc-js leaves them out.
      for (const h of TRANSPORT_HEADERS) md.remove(h);
      this.metadataCache = md;
    }
    return this.metadataCache;
  }

  /** What an authenticator may look at for this call. */
  context(connections?: ConnectionLookup): CallContext {
    const call = this;
    const remote = this.remote;
    return {
      get metadata() {
        return call.metadata;
      },
      get peerCertificate() {
        return call.peerCertificate();
      },
      get connection() {
        return connections?.(remote);
      },
      remote,
    };
  }

  /** Answers the call with a gRPC status and no frame (a refusal). */
  refuse(code: status, details: string): void {
    this.answer(code, details);
  }

  /**
   * The caller's first frame, or undefined when none came within `timeoutMs` (or the call
   * ended first). Further frames wait, unread, until `serve`.
   */
  firstFrame(timeoutMs: number): Promise<Frame | undefined> {
    const first = this.early.shift();
    if (first !== undefined) return Promise.resolve(first);
    if (this.ends.length > 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(undefined), timeoutMs);
      const done = (f: Frame | undefined) => {
        clearTimeout(timer);
        this.waiter = undefined;
        this.stream.pause();
        resolve(f);
      };
      this.waiter = done;
      this.stream.resume();
    });
  }

  /**
   * Hands every frame the caller sends to `onFrame`, and tells `onEnd` how the call ended (it
   * may be told more than once: an end and then the close).
   */
  serve(onFrame: (f: Frame) => void, onEnd: (how: CallEnd, err?: Error) => void): void {
    this.onFrame = onFrame;
    this.onEnd = onEnd;
    for (const f of this.early.splice(0)) onFrame(f);
    for (const [how, err] of this.ends) onEnd(how, err);
    if (!this.stream.destroyed) this.stream.resume();
  }

  /** Ends the call from this side once what is queued is written; nothing if it ended already. */
  end(): void {
    if (this.answered || this.stream.destroyed || this.stream.writableEnded) return;
    this.sink.flush();
    this.answered = true;
    if (!this.headersSent) this.answer(status.OK, '');
    else this.stream.end();
  }

  private peerCertificate(): PeerCertificate | undefined {
    const socket = this.stream.session?.socket;
    if (!(socket instanceof TLSSocket)) return undefined;
    const cert = socket.getPeerCertificate();
    return cert?.raw ? cert : undefined;
  }

  private writeMessage(message: Frame, done?: () => void): boolean {
    const stream = this.stream;
    if (!this.headersSent && !stream.destroyed && !stream.writableEnded) {
      this.headersSent = true;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    }
    return writeGrpcMessage(stream, message, done);
  }

  private onMessage(bytes: Buffer): void {
    // Answered with an error: what the caller still sends is not read.
    if (this.refused) return;
    let f: Frame;
    try {
      f = decodeFrame(bytes);
    } catch (err) {
      this.fail(
        status.INTERNAL,
        `Error deserializing request: ${err instanceof Error ? err.message : String(err)}`,
      );
      return;
    }
    if (this.waiter) this.waiter(f);
    else if (this.onFrame) this.onFrame(f);
    else {
      this.early.push(f);
      this.stream.pause();
    }
  }

  private onFramingError(err: GrpcMessageError): void {
    this.fail(err.reason === 'too_large' ? status.RESOURCE_EXHAUSTED : status.INTERNAL, err.message);
  }

  /** The caller broke the protocol: it is answered with `code` and its end reported as a failure. */
  private fail(code: status, details: string): void {
    this.answer(code, details);
    this.ended('failed', Object.assign(new Error(details), { code, details }));
  }

  private ended(how: CallEnd, err?: Error): void {
    this.waiter?.(undefined);
    if (this.onEnd) this.onEnd(how, err);
    else this.ends.push([how, err]);
  }

  /** Sends the status (trailers-only when nothing was sent yet); the caller's stream is reset soon after. */
  private answer(code: status, details: string): void {
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    this.answered = true;
    const trailers: http2.OutgoingHttpHeaders = { 'grpc-status': String(code) };
    if (details) trailers['grpc-message'] = grpcMessageValue(details);
    if (!this.headersSent) {
      this.headersSent = true;
      if (!stream.headersSent)
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', ...trailers },
          { endStream: true },
        );
    } else if (!stream.writableEnded) {
      stream.removeAllListeners('wantTrailers');
      stream.once('wantTrailers', () => stream.sendTrailers(trailers));
      stream.end();
    }
    if (code === status.OK) return;
    this.refused = true;
    // Whatever the caller still sends is not read: stop it rather than hold the stream open.
    stream.resume();
    const timer = setTimeout(() => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }, ANSWERED_GRACE_MS);
    timer.unref();
    stream.once('close', () => clearTimeout(timer));
  }
}
