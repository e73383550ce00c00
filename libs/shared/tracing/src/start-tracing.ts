import { randomUUID } from 'node:crypto';
import { context, DiagLogLevel, diag, type Tracer, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { SERVICE_NAMES, type TracedApp } from './attributes.js';
import { samplerFromEnv, spanProcessorSettingsFromEnv } from './env-settings.js';

export interface StartTracingOptions {
  app: TracedApp;
  /** `--otlp-address`; undefined: tracing off. */
  address: { host: string; port: number } | undefined;
  /** `--otlp-insecure`: plaintext gRPC to the collector. */
  insecure: boolean;
  logger: Logger;
  version?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

/** One app's tracing: a tracer when exporting, nothing at all otherwise. */
export interface Tracing {
  /** Undefined when tracing is off: callers check it once per request and do nothing else. */
  readonly tracer: Tracer | undefined;
  /** Ends the SDK: spans still queued are exported first (SIGTERM drain). */
  shutdown(): Promise<void>;
}

export const TRACING_OFF: Tracing = { tracer: undefined, shutdown: async () => {} };

const SHUTDOWN_TIMEOUT_MS = 5_000;

/**
 * Starts the OpenTelemetry SDK when `--otlp-address` is set: a batching OTLP/gRPC exporter,
 * the app's resource (service.name, service.instance.id, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_SERVICE_NAME), async-local context. With no address nothing is loaded or dialled.
 */
export async function startTracing(opts: StartTracingOptions): Promise<Tracing> {
  if (!opts.address) {
    if (opts.insecure) opts.logger.info('--otlp-insecure without --otlp-address: no traces are exported');
    return TRACING_OFF;
  }
  const env = opts.env ?? process.env;
  // Loaded only when tracing is on: an app without --otlp-address never pays for the SDK.
  const [sdk, resources, { OTLPTraceExporter }, { AsyncLocalStorageContextManager }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-grpc'),
    import('@opentelemetry/context-async-hooks'),
  ]);
  const log = opts.logger.child({ component: 'tracing' });
  diag.setLogger(
    {
      error: (msg, ...args) => log.warn({ detail: args.map(String) }, msg),
      warn: (msg, ...args) => log.warn({ detail: args.map(String) }, msg),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const { host, port } = opts.address;
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  // http:// makes the exporter dial plaintext; https:// uses TLS with the system roots or
  // OTEL_EXPORTER_OTLP_CERTIFICATE (and a client certificate from OTEL_EXPORTER_OTLP_CLIENT_*).
  const exporter = new OTLPTraceExporter({ url: `${opts.insecure ? 'http' : 'https'}://${target}` });
  const ours = resources.resourceFromAttributes({
    'service.name': SERVICE_NAMES[opts.app],
    'service.namespace': 'pullplane',
    'service.instance.id': randomUUID(),
    ...(opts.version ? { 'service.version': opts.version } : {}),
  });
  // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over our defaults, as the spec says.
  const fromEnv = resources.detectResources({ detectors: [resources.envDetector] });
  const sampler = samplerFromEnv(sdk, env, log);
  const provider = new sdk.TracerProvider({
    resource: ours.merge(fromEnv),
    sampler,
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, ...spanProcessorSettingsFromEnv(env, log) })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('pullplane', opts.version);
  log.info({ address: target, insecure: opts.insecure }, 'exporting traces over OTLP/gRPC');
  let stopped: Promise<void> | undefined;
  return {
    tracer,
    shutdown() {
      stopped ??= Promise.race([
        provider
          .shutdown()
          .catch((err: unknown) => log.warn({ err: String(err) }, 'span export at shutdown failed')),
        new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_TIMEOUT_MS).unref()),
      ]);
      return stopped;
    },
  };
}

const NO_FIELDS: Record<string, string> = {};

/**
 * pino `mixin`: `trace_id` and `span_id` of the active span, on every line written while one
 * is active. Pass it to the logger only when tracing is on (it costs a lookup per line).
 */
export function traceLogFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return NO_FIELDS;
  const sc = span.spanContext();
  return { trace_id: sc.traceId, span_id: sc.spanId };
}
