import { codeErrorClass, defineErrors, errorClass } from '@pullplane/errors';

export const TelemetryErrors = defineErrors('@pullplane/telemetry', {
  METRIC_CONFLICT: {
    code: 'TELEMETRY_METRIC_CONFLICT',
    status: 500,
    message: 'a metric name is already registered with a different type or label set',
  },
  METRIC_USAGE: {
    code: 'TELEMETRY_METRIC_USAGE',
    status: 500,
    message:
      'a metric was defined with an invalid name, label or bucket, or given a label it does not have or a value it cannot take',
  },
  DUPLICATE_CHECK: {
    code: 'TELEMETRY_DUPLICATE_CHECK',
    status: 500,
    message: 'a readiness or liveness check with this name already exists',
  },
  OPS_SERVER_STATE: {
    code: 'TELEMETRY_OPS_SERVER_STATE',
    status: 500,
    message: 'the ops server was started twice, or its ports read before it listened',
  },
});
export type TelemetryErrorCode = (typeof TelemetryErrors.codes)[keyof typeof TelemetryErrors.codes];

/** Base class so callers can tell telemetry failures apart by `code`. */
export class TelemetryError extends errorClass(TelemetryErrors) {}

/** A metric name is already registered with a different type or label set. */
export class MetricConflictError extends codeErrorClass(
  TelemetryErrors,
  TelemetryErrors.codes.METRIC_CONFLICT,
  TelemetryError,
) {}

/** A metric defined or used wrongly: a bad name, label or bucket; a label it lacks; a value it cannot take. */
export class MetricUsageError extends codeErrorClass(
  TelemetryErrors,
  TelemetryErrors.codes.METRIC_USAGE,
  TelemetryError,
) {}

/** A readiness or liveness check with this name already exists. */
export class DuplicateCheckError extends codeErrorClass(
  TelemetryErrors,
  TelemetryErrors.codes.DUPLICATE_CHECK,
  TelemetryError,
) {}

/** `listen()` called twice, or ports read before listening. */
export class OpsServerStateError extends codeErrorClass(
  TelemetryErrors,
  TelemetryErrors.codes.OPS_SERVER_STATE,
  TelemetryError,
) {}
