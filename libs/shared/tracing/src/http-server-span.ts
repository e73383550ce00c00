import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { Attr } from './attributes.js';
import { contextFromTraceparent } from './trace-context.js';

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

// W3C traceparent's shape (version-traceid-parentid-flags) and tracestate's carried size.
const TRACEPARENT_SHAPE = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-|$)/;
const MAX_TRACESTATE = 512;

/**
 * An authenticated caller's own trace context, passed on (in Open) when this proxy does not
 * trace; a value of the wrong shape is dropped rather than carried to the cluster.
 */
export function callerTraceContext(headers: IncomingHttpHeaders): {
  traceparent?: string;
  tracestate?: string;
} {
  const traceparent = header(headers, 'traceparent');
  if (!traceparent || traceparent.length > 128 || !TRACEPARENT_SHAPE.test(traceparent)) return {};
  const tracestate = header(headers, 'tracestate');
  return {
    traceparent,
    ...(tracestate && tracestate.length <= MAX_TRACESTATE ? { tracestate } : {}),
  };
}

/**
 * A proxy's server span for one request. `agent` undefined means the caller is not
 * authenticated (yet): its traceparent is ignored and the span starts a trace of its own.
 */
export function startHttpServerSpan(
  tracer: Tracer,
  req: IncomingMessage,
  at: { requestId: string; startTime: number; agent: string | undefined },
): Span {
  const method = req.method ?? 'GET';
  // The path only: a query may carry selectors and names, never needed to follow a trace.
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const parent =
    at.agent === undefined
      ? ROOT_CONTEXT
      : contextFromTraceparent(header(req.headers, 'traceparent'), header(req.headers, 'tracestate'));
  return tracer.startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      startTime: at.startTime,
      attributes: {
        [Attr.httpMethod]: method,
        [Attr.urlPath]: path,
        [Attr.urlScheme]: (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http',
        [Attr.requestId]: at.requestId,
        ...(at.agent !== undefined ? { [Attr.agentName]: at.agent } : {}),
      },
    },
    parent,
  );
}

/** Ends a proxy's server span: 5xx is the proxy's failure, 4xx the caller's (semantic conventions). */
export function endHttpServerSpan(
  span: Span,
  status: number,
  agent: string | undefined,
  failure: string | undefined,
): void {
  span.setAttribute(Attr.httpStatus, status);
  if (agent !== undefined) span.setAttribute(Attr.agentName, agent);
  if (status >= 500 || failure !== undefined) {
    span.setAttribute(Attr.errorType, failure ?? String(status));
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
