export { AgentCounterChildren, UNKNOWN_AGENT_LABEL } from './agent-label-children.js';
export { type CounterSeries, counterSeries } from './counter-series.js';
export {
  DuplicateCheckError,
  MetricConflictError,
  MetricUsageError,
  OpsServerStateError,
  TelemetryError,
  TelemetryErrors,
} from './errors.js';
export {
  type CheckReport,
  type CheckResult,
  DEFAULT_CHECK_TIMEOUT_MS,
  type HealthCheck,
  HealthChecks,
} from './health-checks.js';
export {
  type CreateLoggerOptions,
  createLogger,
  LOG_LEVELS,
  type LogLevel,
} from './logger.js';
export {
  type CreateMetricsRegistryOptions,
  createMetricsRegistry,
  DEFAULT_METRIC_PREFIX,
  getOrCreateCounter,
  getOrCreateGauge,
  getOrCreateHistogram,
  getOrCreateSummary,
  type MetricNameOptions,
  metricName,
} from './metrics.js';
export {
  createOpsServer,
  type OpsServer,
  type OpsServerAddress,
  type OpsServerOptions,
} from './ops-server.js';
export { isSensitiveKey, REDACT_CENSOR, REDACT_TRUNCATED, redactSecrets } from './redact.js';
export { type RequestLog, requestLog } from './request-log.js';
export {
  type HistogramSeries,
  SeriesHistogram,
  type SeriesHistogramConfiguration,
} from './series-histogram.js';
export {
  DEFAULT_SHUTDOWN_GRACE_MS,
  type InstallShutdownOptions,
  installShutdown,
  type SignalSource,
} from './shutdown.js';
