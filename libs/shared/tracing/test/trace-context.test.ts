import { context, trace } from '@opentelemetry/api';
import {
  AlwaysOnSampler,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  contextFromTraceparent,
  startTracing,
  TRACING_OFF,
  traceHeaders,
  traceLogFields,
} from '../src/index.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function tracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { tracer: provider.getTracer('test'), exporter };
}

describe('contextFromTraceparent', () => {
  it('makes the remote span the parent, keeping tracestate', () => {
    const { tracer: t } = tracer();
    const span = t.startSpan(
      'x',
      {},
      contextFromTraceparent(`00-${TRACE}-${PARENT}-01`, 'congo=t61rcWkgMzE'),
    );
    expect(span.spanContext().traceId).toBe(TRACE);
    expect((span as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId).toBe(
      PARENT,
    );
    expect(traceHeaders(span)).toEqual({
      traceparent: `00-${TRACE}-${span.spanContext().spanId}-01`,
      tracestate: 'congo=t61rcWkgMzE',
    });
  });

  it.each([
    ['empty', ''],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${PARENT}-01`],
    ['upper case', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ['short trace id', `00-${TRACE.slice(2)}-${PARENT}-01`],
    ['garbage', 'not a traceparent'],
    ['extra field in version 00', `00-${TRACE}-${PARENT}-01-extra`],
  ])('starts a new trace for a malformed traceparent (%s)', (_name, value) => {
    const { tracer: t } = tracer();
    const span = t.startSpan('x', {}, contextFromTraceparent(value));
    expect(span.spanContext().traceId).not.toBe(TRACE);
    expect((span as unknown as { parentSpanContext?: unknown }).parentSpanContext).toBeUndefined();
  });

  it('keeps an unsampled caller unsampled (flags 00) under the parent-based default', async () => {
    const t = await startTracing({
      app: 'resource-proxy',
      address: { host: '127.0.0.1', port: 9 },
      insecure: true,
      logger: pino({ level: 'silent' }),
      env: {},
    });
    try {
      const span = t.tracer!.startSpan('x', {}, contextFromTraceparent(`00-${TRACE}-${PARENT}-00`));
      expect(span.isRecording()).toBe(false);
      expect(traceHeaders(span).traceparent).toMatch(/-00$/);
      span.end();
    } finally {
      await t.shutdown();
      trace.disable();
      context.disable();
    }
  });
});

describe('startTracing', () => {
  it('with no address loads nothing and returns no tracer', async () => {
    const t = await startTracing({
      app: 'agent',
      address: undefined,
      insecure: false,
      logger: pino({ level: 'silent' }),
    });
    expect(t).toBe(TRACING_OFF);
    expect(t.tracer).toBeUndefined();
    await t.shutdown();
  });

  it('honours OTEL_TRACES_SAMPLER=always_off and reports a bad OTEL_BSP_* value', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const t = await startTracing({
      app: 'agent',
      address: { host: '127.0.0.1', port: 9 },
      insecure: true,
      logger,
      env: { OTEL_TRACES_SAMPLER: 'always_off', OTEL_BSP_SCHEDULE_DELAY: 'soon' },
    });
    try {
      expect(t.tracer!.startSpan('x').isRecording()).toBe(false);
      expect(
        lines.some((l) => String(l.msg).includes('OTEL_BSP_SCHEDULE_DELAY is not a positive integer')),
      ).toBe(true);
    } finally {
      await t.shutdown();
      trace.disable();
      context.disable();
    }
  });

  it('puts trace_id and span_id on log lines written while a span is active, and nothing otherwise', async () => {
    const t = await startTracing({
      app: 'agent',
      address: { host: '127.0.0.1', port: 9 },
      insecure: true,
      logger: pino({ level: 'silent' }),
      env: {},
    });
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ mixin: traceLogFields }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    try {
      const span = t.tracer!.startSpan('x', {}, contextFromTraceparent(`00-${TRACE}-${PARENT}-01`));
      await context.with(trace.setSpan(context.active(), span), async () => {
        await new Promise((r) => setImmediate(r));
        logger.info('inside');
      });
      logger.info('outside');
      span.end();
      expect(lines[0]).toMatchObject({ msg: 'inside', trace_id: TRACE, span_id: span.spanContext().spanId });
      expect(lines[1]!.msg).toBe('outside');
      expect(lines[1]!.trace_id).toBeUndefined();
    } finally {
      await t.shutdown();
      trace.disable();
      context.disable();
    }
  });
});
