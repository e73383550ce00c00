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
 * Use `logger.child({ agent, requestId })` (or `withContext`) for per-agent / per-request loggers.
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
        bindings: (bindings) => redactSecrets(bindings), // base fields only; see withContext
      },
      ...(opts.redact?.length ? { redact: { paths: [...opts.redact], censor: REDACT_CENSOR } } : {}),
      ...(opts.mixin ? { mixin: opts.mixin } : {}),
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    opts.destination,
  );
}

export interface LogContext {
  readonly agent?: string;
  readonly requestId?: string;
  readonly [key: string]: unknown;
}

/**
 * A child logger carrying `agent` / `requestId`; undefined fields are left out. Prefer it to
 * `logger.child()`, whose bindings skip redaction (pino resets the bindings formatter for children).
 */
export function withContext(logger: Logger, context: LogContext): Logger {
  const bindings = Object.fromEntries(Object.entries(context).filter(([, v]) => v !== undefined));
  return logger.child(redactSecrets(bindings));
}
