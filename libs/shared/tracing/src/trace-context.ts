import { createRequire } from 'node:module';
import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Span,
  trace,
} from '@opentelemetry/api';
import type { W3CTraceContextPropagator } from '@opentelemetry/core';

let propagator: W3CTraceContextPropagator | undefined;
/**
 * Loaded on first use: only code that makes spans calls these, and @opentelemetry/core
 * brings the semantic conventions along (a few MiB an app without tracing need not hold).
 */
function w3c(): W3CTraceContextPropagator {
  propagator ??= new (
    createRequire(import.meta.url)('@opentelemetry/core') as typeof import('@opentelemetry/core')
  ).W3CTraceContextPropagator();
  return propagator;
}

export interface TraceHeaders {
  traceparent: string;
  tracestate: string;
}

/**
 * A context whose parent is the remote span `traceparent` names (W3C Trace Context, with its
 * `tracestate`); the active context when absent or malformed, so a bad value starts a new
 * trace rather than failing anything.
 */
export function contextFromTraceparent(traceparent: string | undefined, tracestate?: string): Context {
  const base = context.active();
  if (!traceparent) return base;
  return w3c().extract(base, { traceparent, tracestate }, defaultTextMapGetter);
}

/** `traceparent` and `tracestate` (empty when none) that make the receiver's spans children of `span`. */
export function traceHeaders(span: Span): TraceHeaders {
  const carrier: Partial<TraceHeaders> = {};
  w3c().inject(trace.setSpan(context.active(), span), carrier, defaultTextMapSetter);
  return { traceparent: carrier.traceparent ?? '', tracestate: carrier.tracestate ?? '' };
}
