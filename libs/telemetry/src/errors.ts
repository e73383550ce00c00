/** Base class so callers can tell telemetry failures apart by `code`. */
export class TelemetryError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'TelemetryError';
    this.code = code;
  }
}

/** A metric name is already registered with a different type or label set. */
export class MetricConflictError extends TelemetryError {
  constructor(message: string) {
    super('TELEMETRY_METRIC_CONFLICT', message);
    this.name = 'MetricConflictError';
  }
}

/** A readiness or liveness check with this name already exists. */
export class DuplicateCheckError extends TelemetryError {
  constructor(name: string) {
    super('TELEMETRY_DUPLICATE_CHECK', `check ${JSON.stringify(name)} is already registered`);
    this.name = 'DuplicateCheckError';
  }
}

/** `listen()` called twice, or ports read before listening. */
export class OpsServerStateError extends TelemetryError {
  constructor(message: string) {
    super('TELEMETRY_OPS_SERVER_STATE', message);
    this.name = 'OpsServerStateError';
  }
}
