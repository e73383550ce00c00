import http2 from 'node:http2';
import { status } from '@grpc/grpc-js';
import { decodeFrame, type Frame, GrpcDeframer } from '@pullplane/proto';
import { FrameBatcher, type FrameSink, type FrameTransport, writableFrameTransport } from '@pullplane/tunnel';
import { writeGrpcMessage } from './grpc-message-writer.js';
import { type CallStatus, statusOfHeaders, statusOfHttp } from './grpc-status.js';

export interface FrameCallHandlers {
  /** Each frame the server sends, in order. */
  onFrame(f: Frame): void;
  /**
   * Once, after the last frame: OK when the server ended the call, anything else when it failed
   * (refused, reset, the connection lost, a malformed response, or cancelled here).
   */
  onEnd(end: CallStatus): void;
}

/** A transport that takes nothing: the sink of a call that never started. */
const CLOSED_TRANSPORT: FrameTransport = {
  closed: true,
  needsDrain: false,
  write: (_m, done) => {
    if (done) queueMicrotask(done);
    return false;
  },
  drained: () => Promise.resolve(),
};

/**
 * One bidi call of Frames from the client's side, on one HTTP/2 stream: frames out through
 * `sink` (each event-loop turn's frames as one gRPC message), frames in to `onFrame`, and one
 * status at the end, reported as grpc-js reports it (asynchronously, after the frames).
 */
export class FrameClientCall {
  readonly sink: FrameSink;
  private reported = false;
  private cancelled = false;
  private received: CallStatus | undefined;
  private lastError: Error | undefined;

  /** A call that could not be opened: it ends with `end` in a microtask and sends nothing. */
  static failed(end: CallStatus, maxMessageBytes: number, handlers: FrameCallHandlers): FrameClientCall {
    return new FrameClientCall(undefined, maxMessageBytes, handlers, end);
  }

  constructor(
    private readonly stream: http2.ClientHttp2Stream | undefined,
    maxMessageBytes: number,
    private readonly handlers: FrameCallHandlers,
    failedWith?: CallStatus,
  ) {
    if (!stream) {
      this.sink = new FrameBatcher(CLOSED_TRANSPORT);
      queueMicrotask(() => this.report(failedWith ?? { code: status.UNKNOWN, details: 'no call' }));
      return;
    }
    this.sink = new FrameBatcher(
      writableFrameTransport(stream, (m, done) => writeGrpcMessage(stream, m, done)),
    );
    const deframer = new GrpcDeframer({
      maxMessageBytes,
      onMessage: (bytes) => {
        if (this.received) return;
        let f: Frame;
        try {
          f = decodeFrame(bytes);
        } catch (err) {
          this.abort(
            status.INTERNAL,
            `Failed to parse server response: ${err instanceof Error ? err.message : String(err)}`,
          );
          return;
        }
        handlers.onFrame(f);
      },
      onError: (err) =>
        this.abort(err.reason === 'too_large' ? status.RESOURCE_EXHAUSTED : status.INTERNAL, err.message),
    });
    stream.on('response', (headers) => {
      const httpStatus = Number(headers[':status']);
      if (httpStatus !== 200) {
        this.abort(statusOfHttp(httpStatus), `Received HTTP status code ${httpStatus}`);
        return;
      }
      const trailersOnly = statusOfHeaders(headers);
      if (trailersOnly) {
        this.received = trailersOnly;
        return;
      }
      const contentType = String(headers['content-type'] ?? '');
      if (!contentType.startsWith('application/grpc'))
        this.abort(status.UNKNOWN, `Received a response of content-type ${JSON.stringify(contentType)}`);
    });
    stream.on('data', (chunk: Buffer) => deframer.push(chunk));
    stream.on('trailers', (trailers) => {
      this.received ??= statusOfHeaders(trailers) ?? {
        code: status.UNKNOWN,
        details: 'the response ended with no grpc-status',
      };
    });
    stream.on('end', () => {
      if (this.cancelled) return; // the close reports it
      if (!this.received && !this.reported)
        this.received = { code: status.INTERNAL, details: 'the response ended with no status' };
      else if (this.received?.code === status.OK && !deframer.atBoundary)
        this.received = { code: status.INTERNAL, details: 'the response ended inside a message' };
      this.settle();
    });
    stream.on('error', (err: Error) => {
      this.lastError = err;
    });
    stream.on('close', () => this.settle());
  }

  /** Sends one frame (it leaves with the rest of this turn's). */
  write(f: Frame): void {
    this.sink.send(f);
  }

  /** Half-closes: what is queued is written, then the server sees the end of the call. */
  end(): void {
    const stream = this.stream;
    if (!stream || stream.destroyed || stream.writableEnded) return;
    this.sink.flush();
    stream.end();
  }

  /** Resets the call; it ends CANCELLED (reported asynchronously, like any end). */
  cancel(): void {
    const stream = this.stream;
    if (!stream || stream.destroyed || this.reported) return;
    this.cancelled = true;
    stream.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** A broken response: the call is reset and ends with `code`. */
  private abort(code: status, details: string): void {
    if (this.received || this.reported) return;
    this.received = { code, details };
    this.stream?.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** Reports the end once the response is over: its status, or why there was none. */
  private settle(): void {
    if (this.reported) return;
    const stream = this.stream!;
    // Once the response has ended node:http2 closes the stream (this side has nothing more to say).
    if (this.received) {
      this.report(this.received);
      return;
    }
    if (!stream.closed) return;
    if (this.cancelled) this.report({ code: status.CANCELLED, details: 'Cancelled on client' });
    else
      this.report({
        code: status.UNAVAILABLE,
        details: this.lastError
          ? this.lastError.message
          : `the stream was reset (HTTP/2 code ${stream.rstCode ?? 'none'})`,
      });
  }

  private report(end: CallStatus): void {
    if (this.reported) return;
    this.reported = true;
    this.handlers.onEnd(end);
  }
}
