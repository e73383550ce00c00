import { type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { GATEWAY_FORWARD_PATH, type Open } from '@pullplane/proto';
import { Attr, contextFromTraceparent, traceHeaders } from '@pullplane/tracing';
import { isTunnelError, TunnelErrorCode } from '@pullplane/tunnel';

// Relayed streams' spans keep the name they had when Forward relayed them too (it names the
// retired method): dashboards and alerts match on it.
const [, RPC_SERVICE = '', RPC_METHOD = ''] = GATEWAY_FORWARD_PATH.split('/');

/**
 * The span of one relayed stream, parented on the trace context the proxy put in Open; Open
 * then carries this span on to the agent, so the agent's span is its child.
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
