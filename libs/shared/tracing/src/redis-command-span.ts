import { type Context, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { Attr } from './attributes.js';

/**
 * A span for one Redis command sent to an agent (the proxy's side, kind SERVER) or run on
 * the agent's Redis (kind CLIENT). Only the command's name is recorded: never keys, values
 * or arguments. Names are those the allow-lists let through, so they stay few.
 */
export function startRedisCommandSpan(
  tracer: Tracer,
  kind: 'proxy' | 'agent',
  command: Buffer,
  attrs: { agent?: string | undefined; server?: { host: string; port: number } | undefined },
  parent?: Context,
): Span {
  const name = command.toString('latin1').toUpperCase();
  return tracer.startSpan(
    name,
    {
      kind: kind === 'proxy' ? SpanKind.SERVER : SpanKind.CLIENT,
      attributes: {
        [Attr.dbSystem]: 'redis',
        [Attr.dbSystemName]: 'redis',
        [Attr.dbOperation]: name,
        ...(attrs.agent ? { [Attr.agentName]: attrs.agent } : {}),
        ...(attrs.server
          ? { [Attr.serverAddress]: attrs.server.host, [Attr.serverPort]: attrs.server.port }
          : {}),
      },
    },
    parent,
  );
}

/** Ends the span; `failure` (a short, stable reason) marks it failed. */
export function endRedisCommandSpan(span: Span, failure: string | undefined): void {
  if (failure !== undefined) {
    span.setAttribute(Attr.errorType, failure);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
