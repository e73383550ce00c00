import type { IncomingMessage } from 'node:http';
import type { Span, Tracer } from '@opentelemetry/api';
import { callerTraceContext, endHttpServerSpan, startHttpServerSpan, traceHeaders } from '@pullplane/tracing';

/**
 * One request's server span, when traces are exported. It starts when the caller is known
 * (under the caller's trace) or, for a refusal, when the answer is given (a trace of its own:
 * an unauthenticated caller never puts us in the trace it names).
 */
export class ServerSpan {
  private readonly startedAt = Date.now();
  private span: Span | undefined;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly req: IncomingMessage,
    private readonly requestId: string,
  ) {}

  /** The caller is authenticated: its span starts, and the Open carries it as the parent. */
  accepted(agent: string): { traceparent: string; tracestate: string } {
    this.span = startHttpServerSpan(this.tracer, this.req, {
      requestId: this.requestId,
      startTime: this.startedAt,
      agent,
    });
    return traceHeaders(this.span);
  }

  /** Trace and span id for the audit line, once the span exists. */
  ids(): { trace_id: string; span_id: string } | undefined {
    if (!this.span) return undefined;
    const c = this.span.spanContext();
    return { trace_id: c.traceId, span_id: c.spanId };
  }

  end(status: number, agent: string | undefined, failure: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.span ??= startHttpServerSpan(this.tracer, this.req, {
      requestId: this.requestId,
      startTime: this.startedAt,
      agent: undefined,
    });
    endHttpServerSpan(this.span, status, agent, failure);
  }
}

/** The trace context an Open carries: our span's, or (untraced) an authenticated caller's own. */
export function openTraceContext(
  span: ServerSpan | undefined,
  req: IncomingMessage,
  agent: string,
): { traceparent?: string; tracestate?: string } {
  return span ? span.accepted(agent) : callerTraceContext(req.headers);
}
