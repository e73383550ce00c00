import type { IncomingMessage } from 'node:http';
import type { Tracer } from '@opentelemetry/api';
import { requestIdOf } from './forwarded-headers.js';
import type { ExchangeReport, FrontTarget, ProxyRoute } from './proxy-route.js';
import { openTraceContext, ServerSpan } from './server-span.js';

type Outcome = Pick<ExchangeReport<FrontTarget>, 'failure' | 'error' | 'cancelled' | 'upgrade'>;

/**
 * What the front knows about one exchange while it lasts: its id, when it started, the bytes
 * each way, its span, and the target once known. `finish` reports it to the proxy exactly once.
 */
export class ExchangeRecord<T extends FrontTarget> {
  readonly requestId: string;
  private readonly started = process.hrtime.bigint();
  private readonly span: ServerSpan | undefined;
  bytesIn = 0;
  bytesOut = 0;
  target: Partial<T> | undefined;
  accepted = false;
  private done = false;

  constructor(
    private readonly route: ProxyRoute<T, string>,
    readonly req: IncomingMessage,
    tracer: Tracer | undefined,
  ) {
    this.requestId = requestIdOf(req);
    this.span = tracer ? new ServerSpan(tracer, req, this.requestId) : undefined;
  }

  /** The caller was accepted for `target`; returns the trace context its Open carries. */
  accept(target: T): { traceparent?: string; tracestate?: string } {
    this.target = target;
    this.accepted = true;
    return openTraceContext(this.span, this.req, target.agent);
  }

  /** Seconds since the request arrived. */
  elapsed(): number {
    return Number(process.hrtime.bigint() - this.started) / 1e9;
  }

  get finished(): boolean {
    return this.done;
  }

  finish(status: number, outcome: Outcome = {}): void {
    if (this.done) return;
    this.done = true;
    this.span?.end(status, this.target?.agent, outcome.failure);
    const trace = this.span?.ids();
    this.route.finished({
      req: this.req,
      requestId: this.requestId,
      target: this.target,
      accepted: this.accepted,
      status,
      ...outcome,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      durationMs: this.elapsed() * 1000,
      ...(trace ? { trace } : {}),
    });
  }
}
