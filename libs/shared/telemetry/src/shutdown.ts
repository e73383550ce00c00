import type { Logger } from 'pino';

/** What `installShutdown` needs from `process`; injectable for tests. */
export interface SignalSource {
  on(event: NodeJS.Signals, listener: () => void): unknown;
  removeListener(event: NodeJS.Signals, listener: () => void): unknown;
}

export interface InstallShutdownOptions {
  readonly logger: Logger;
  /** Defaults to SIGTERM (Kubernetes) and SIGINT (Ctrl-C). */
  readonly signals?: readonly NodeJS.Signals[];
  /** Time budget for `shutdown`; match it to terminationGracePeriodSeconds minus some slack. */
  readonly drainTimeoutMs: number;
  /** Extra time past `drainTimeoutMs` before forcing exit, so a drain that is nearly done can finish. */
  readonly graceMs?: number;
  /** Drains and closes everything; runs once, for the first signal. */
  readonly shutdown: (signal: NodeJS.Signals) => Promise<void>;
  /** Defaults to `process.exit`. */
  readonly exit?: (code: number) => void;
  /** Defaults to `process`. */
  readonly process?: SignalSource;
  /** Defaults to `Date.now`; injectable so fake timers measure durations too. */
  readonly now?: () => number;
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 1_000;

/**
 * Graceful shutdown: the first signal runs `shutdown` once (exit 0 when it resolves, 1 when it
 * throws or overruns `drainTimeoutMs + graceMs`); a second signal exits 1 at once.
 * Returns a function that removes the signal handlers.
 */
export function installShutdown(opts: InstallShutdownOptions): () => void {
  const proc = opts.process ?? process;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const now = opts.now ?? Date.now;
  const log = opts.logger;
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const limitMs = opts.drainTimeoutMs + (opts.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
  let started = false;
  let done = false;
  let timer: NodeJS.Timeout | undefined;

  const finish = (code: number) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    flush(log);
    exit(code);
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (done) return;
    if (started) {
      log.warn({ signal }, 'second signal during shutdown, exiting now');
      finish(1);
      return;
    }
    started = true;
    const startedAt = now();
    log.info({ signal, drainTimeoutMs: opts.drainTimeoutMs }, 'shutdown started');
    // Deliberately not unref'd: it must fire even if the drain leaves nothing else scheduled.
    timer = setTimeout(() => {
      log.error({ signal, durationMs: now() - startedAt, limitMs }, 'shutdown timed out, forcing exit');
      finish(1);
    }, limitMs);
    let running: Promise<void>;
    try {
      running = Promise.resolve(opts.shutdown(signal));
    } catch (err) {
      running = Promise.reject(err);
    }
    running.then(
      () => {
        if (done) return;
        log.info({ signal, durationMs: now() - startedAt }, 'shutdown complete');
        finish(0);
      },
      (err: unknown) => {
        if (done) return;
        log.error({ err, signal, durationMs: now() - startedAt }, 'shutdown failed');
        finish(1);
      },
    );
  };

  const listeners = signals.map((signal) => [signal, () => onSignal(signal)] as const);
  for (const [signal, listener] of listeners) proc.on(signal, listener);
  return () => {
    for (const [signal, listener] of listeners) proc.removeListener(signal, listener);
  };
}

function flush(log: Logger): void {
  try {
    log.flush();
  } catch {
    // Best effort: a sync destination has nothing to flush.
  }
}
