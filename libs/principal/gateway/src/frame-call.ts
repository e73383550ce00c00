import type { ServerDuplexStream, status } from '@grpc/grpc-js';
import type { Frame } from '@pullplane/proto';
import { duplexFrameSink, type FrameSink } from '@pullplane/tunnel';
import type { CallContext, ConnectionLookup } from './caller-auth.js';

/** How a call ended, as grpc-js tells it. */
export type CallEnd = 'ended' | 'cancelled' | 'failed' | 'closed';

/** The peer certificate and connection identity are looked up only if an authenticator asks. */
export function callContext(
  call: ServerDuplexStream<unknown, unknown>,
  connections?: ConnectionLookup,
): CallContext {
  const remote = call.getPeer();
  return {
    metadata: call.metadata,
    get peerCertificate() {
      return call.getAuthContext()?.sslPeerCertificate;
    },
    get connection() {
      return connections?.(remote);
    },
    remote,
  };
}

/**
 * A gRPC bidi call of Frames as the gateway serves it (AgentTunnel.Connect, GatewayForward.Link,
 * and the methods a listener refuses): the one place that knows grpc-js's server call, its
 * events and how to answer with a status. The agent session, the link service and the tunnel
 * service see frames in, a sink for frames out, and one end.
 */
export class FrameCall {
  /** Frames out: each turn's frames leave as one gRPC message. */
  readonly sink: FrameSink;
  readonly remote: string;

  constructor(private readonly call: ServerDuplexStream<Frame, Frame>) {
    this.sink = duplexFrameSink(call);
    this.remote = call.getPeer();
  }

  /** What an authenticator may look at for this call. */
  context(connections?: ConnectionLookup): CallContext {
    return callContext(this.call, connections);
  }

  /** Answers the call with a gRPC status and no frame (a refusal). */
  refuse(code: status, details: string): void {
    this.call.emit('error', { code, details, name: 'CallRefused', message: details });
  }

  /**
   * The caller's first frame, or undefined when none came within `timeoutMs` (or the call
   * ended first). Further frames wait, unread, until `serve`.
   */
  firstFrame(timeoutMs: number): Promise<Frame | undefined> {
    const call = this.call;
    return new Promise((resolve) => {
      const done = (f: Frame | undefined) => {
        clearTimeout(timer);
        call.off('data', onData);
        call.off('end', onEnd);
        call.off('error', onEnd);
        resolve(f);
      };
      const onData = (f: Frame) => {
        call.pause();
        done(f);
      };
      const onEnd = () => done(undefined);
      const timer = setTimeout(() => done(undefined), timeoutMs);
      call.once('data', onData);
      call.once('end', onEnd);
      call.once('error', onEnd);
    });
  }

  /**
   * Hands every frame the caller sends to `onFrame`, and tells `onEnd` how the call ended (it
   * may be told more than once, as grpc-js reports an end and then the close).
   */
  serve(onFrame: (f: Frame) => void, onEnd: (how: CallEnd, err?: Error) => void): void {
    const call = this.call;
    call.on('data', onFrame);
    call.on('end', () => onEnd('ended'));
    call.on('cancelled', () => onEnd('cancelled'));
    call.on('error', (err: Error) => onEnd('failed', err));
    call.on('close', () => onEnd('closed'));
    call.resume();
  }

  /** Ends the call from this side once what is queued is written; nothing if it ended already. */
  end(): void {
    if (this.call.writableEnded || this.call.destroyed) return;
    this.sink.flush();
    this.call.end();
  }
}
