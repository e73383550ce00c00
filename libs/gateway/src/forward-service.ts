import { type ServerDuplexStream, status } from '@grpc/grpc-js';
import { type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { type Frame, frame, GATEWAY_FORWARD_PATH, type Open } from '@pullplane/proto';
import { Attr, contextFromTraceparent, traceHeaders } from '@pullplane/tracing';
import {
  duplexFrameSink,
  type FrameSink,
  forEachFrame,
  isTunnelError,
  readBuffered,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
} from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { type Authenticator, type ConnectionLookup, callContext } from './caller-auth.js';
import type { GatewayMetrics } from './metrics.js';

type Call = ServerDuplexStream<Frame, Frame>;

export interface ForwardServiceOptions {
  gatewayId: string;
  authenticate: Authenticator;
  /** The identities the internal listener recorded per TLS connection. */
  connections?: ConnectionLookup;
  /** Opens a logical stream to an agent held here, or throws a TunnelError (NOT_FOUND…). */
  openLocal: (agent: string, open: Open) => TunnelStream;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Set when traces are exported: a span per relayed stream, child of the proxy's. */
  tracer?: Tracer | undefined;
}

const [, RPC_SERVICE = '', RPC_METHOD = ''] = GATEWAY_FORWARD_PATH.split('/');

/**
 * The relay's span, parented on the trace context the proxy put in Open; Open then carries
 * this span on to the agent, so the agent's span is its child.
 */
export function startRelaySpan(tracer: Tracer, open: Open, gatewayId: string): Span {
  const span = tracer.startSpan(
    GATEWAY_FORWARD_PATH.slice(1),
    {
      kind: SpanKind.SERVER,
      attributes: {
        [Attr.rpcSystem]: 'grpc',
        [Attr.rpcService]: RPC_SERVICE,
        [Attr.rpcMethod]: RPC_METHOD,
        [Attr.agentName]: open.agent,
        [Attr.gatewayId]: gatewayId,
        ...(open.requestId ? { [Attr.requestId]: open.requestId } : {}),
      },
    },
    contextFromTraceparent(open.traceparent, open.tracestate),
  );
  const next = traceHeaders(span);
  open.traceparent = next.traceparent;
  open.tracestate = next.tracestate;
  return span;
}

export function endRelaySpan(span: Span, err: Error | null | undefined): void {
  if (err) {
    const code = isTunnelError(err) ? err.code : 'INTERNAL';
    span.setAttribute(Attr.errorType, String(code));
    // A requester that went away is not a relay failure.
    if (!(isTunnelError(err) && err.code === TunnelErrorCode.CANCELLED))
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  }
  span.end();
}

const sendReset = (call: Call, sink: FrameSink, err: TunnelError) => {
  if (call.writableEnded || call.destroyed) return;
  sink.send(frame({ case: 'reset', value: { streamId: 1, code: err.resetCode, message: err.message } }));
  sink.flush?.();
  call.end();
};

/**
 * Authenticates and authorises a call on the internal listener (Forward or Link), once per call;
 * a refused call is answered with its gRPC status and false.
 */
export async function admitInternalCall(
  call: Call,
  opts: Pick<ForwardServiceOptions, 'authenticate' | 'connections' | 'logger' | 'metrics'>,
): Promise<boolean> {
  const auth = await opts.authenticate(callContext(call, opts.connections));
  if (auth.ok) return true;
  opts.metrics.internalAuthFailures.inc({ code: auth.code });
  opts.logger.warn(
    { code: auth.code, reason: auth.reason, remote: call.getPeer() },
    'internal caller rejected',
  );
  call.emit('error', {
    code: auth.code === 'INTERNAL_CALLER_NOT_ALLOWED' ? status.PERMISSION_DENIED : status.UNAUTHENTICATED,
    details: auth.reason,
  });
  return false;
}

/**
 * GatewayForward.Forward: a proxy replica's request for an agent held here. One gRPC call
 * per logical stream; HTTP/2 flow control on this hop and the tunnel's credit on the next
 * are chained by pausing whichever side is ahead. Kept for proxies of the previous release,
 * which do not speak Link.
 */
export function createForwardHandler(opts: ForwardServiceOptions): (call: Call) => void {
  return (call) => {
    void (async () => {
      if (!(await admitInternalCall(call, opts))) return;
      call.once('data', (first: Frame) => {
        call.pause();
        if (first.kind.case !== 'open' || !first.kind.value.agent) {
          call.emit('error', {
            code: status.INVALID_ARGUMENT,
            details: 'first frame must be Open with an agent',
          });
          return;
        }
        bridge(call, first.kind.value, opts);
      });
    })().catch((err: unknown) => {
      opts.logger.error({ err: String(err) }, 'forward handler failed');
      call.emit('error', { code: status.INTERNAL, details: 'forward handler failed' });
    });
  };
}

function bridge(call: Call, open: Open, opts: ForwardServiceOptions): void {
  const sink = duplexFrameSink(call);
  const span = opts.tracer ? startRelaySpan(opts.tracer, open, opts.gatewayId) : undefined;
  let stream: TunnelStream;
  try {
    stream = opts.openLocal(open.agent, open);
  } catch (err) {
    const e = isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, String(err));
    if (span) endRelaySpan(span, e);
    opts.metrics.forwardRejected.inc({ code: e.code });
    sendReset(call, sink, e);
    return;
  }
  opts.metrics.forwardedStreams.inc();
  sink.send(frame({ case: 'accepted', value: {} }));

  // proxy -> agent
  const fromProxy = (f: Frame) => {
    switch (f.kind.case) {
      case 'data':
        if (!stream.write(f.kind.value.chunk)) {
          call.pause();
          stream.once('drain', () => call.resume());
        }
        return;
      case 'end':
        stream.end();
        return;
      case 'reset':
        stream.reset(
          TunnelError.fromReset(f.kind.value.code, f.kind.value.message).code,
          f.kind.value.message,
        );
        return;
      default:
        stream.reset(TunnelErrorCode.PROTOCOL, `unexpected ${f.kind.case} frame from proxy`);
    }
  };
  call.on('data', (f: Frame) => forEachFrame(f, fromProxy));
  // The proxy went away: the agent must stop working on it too.
  const abandon = () => {
    if (!stream.destroyed) stream.reset(TunnelErrorCode.CANCELLED, 'requester went away');
  };
  call.on('cancelled', abandon);
  call.on('error', abandon);
  call.resume();

  // agent -> proxy
  stream
    .responseHead()
    .then((head) => {
      if (call.writableEnded) return;
      if (span && open.head.case === 'http') span.setAttribute(Attr.httpStatus, head.status);
      // What came with the head (often all of a small response) leaves with it as one message.
      // The 'data' and 'end' events come ticks later, after the batcher has written the head
      // alone: the proxy would get head, body and end as three messages, three turns.
      const body = readBuffered(stream);
      const done = stream.inputEnded && stream.readableLength === 0;
      sink.send(
        frame({
          case: 'responseHead',
          value: body.byteLength > 0 || done ? { ...head, body, endStream: done } : head,
        }),
      );
      if (done) {
        sink.flush();
        call.end();
        // Let the stream emit 'end' and close so the tunnel side is released.
        stream.resume();
        return;
      }
      stream.on('data', (chunk: Buffer) => {
        if (!sink.send(frame({ case: 'data', value: { streamId: 1, chunk } }))) {
          stream.pause();
          call.once('drain', () => stream.resume());
        }
      });
      stream.on('end', () => {
        if (call.writableEnded) return;
        sink.send(frame({ case: 'end', value: { streamId: 1 } }));
        sink.flush?.();
        call.end();
      });
    })
    .catch(() => undefined);
  stream.on('close', () => {
    const err = stream.errored;
    if (span) endRelaySpan(span, err);
    if (err && !call.writableEnded) {
      sendReset(
        call,
        sink,
        isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, err.message),
      );
    }
  });
}
