export { Attr, SERVICE_NAMES, type TracedApp } from './attributes.js';
export { callerTraceContext, endHttpServerSpan, startHttpServerSpan } from './http-server-span.js';
export { endRedisCommandSpan, startRedisCommandSpan } from './redis-command-span.js';
export {
  type StartTracingOptions,
  startTracing,
  TRACING_OFF,
  type Tracing,
  traceLogFields,
} from './start-tracing.js';
export { contextFromTraceparent, type TraceHeaders, traceHeaders } from './trace-context.js';
export { agentTracingOptions, principalTracingOptions } from './tracing-options.js';
