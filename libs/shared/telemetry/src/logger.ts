import pino, { type DestinationStream, type Logger } from 'pino';
import { REDACT_CENSOR, redactSecrets } from './redact.js';

/** argocd-agent's log levels (`--log-level`). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface CreateLoggerOptions {
  /** `silent` is for tests. */
  readonly level: LogLevel | 'silent';
  /** The app, written as the `name` field of every line. */
  readonly name: string;
  /** Extra fields on every line (e.g. `{ version }`); replaces pino's default pid/hostname. */
  readonly base?: Record<string, unknown>;
  /** Defaults to stdout. */
  readonly destination?: DestinationStream;
  /**
   * Extra pino redact paths (`a.b`, `*.c`) for fields the key-name rule misses; each wildcard
   * path costs on every log call.
   */
  readonly redact?: readonly string[];
  /** Fields merged into every line when it is written (e.g. the active span's trace_id/span_id). */
  readonly mixin?: () => Record<string, unknown>;
}

/**
 * JSON logger for an app: string level labels, ISO timestamps, `name` = app, credential fields
 * (authorization, cookie, password, *token, *secret, api keys) redacted in nested plain objects.
 * Use `logger.child({ agent, requestId })` for per-agent / per-request loggers; child bindings
 * are not redacted (pino resets the bindings formatter for children), so never bind credentials.
 */
export function createLogger(opts: CreateLoggerOptions): Logger {
  return pino(
    {
      name: opts.name,
      level: opts.level,
      ...(opts.base ? { base: opts.base } : {}),
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => redactSecrets(obj),
        bindings: (bindings) => redactSecrets(bindings), // base fields only; see above
      },
      ...(opts.redact?.length ? { redact: { paths: [...opts.redact], censor: REDACT_CENSOR } } : {}),
      ...(opts.mixin ? { mixin: opts.mixin } : {}),
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    opts.destination,
  );
}
