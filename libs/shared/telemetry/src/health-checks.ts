import { DuplicateCheckError } from './errors.js';

/** `true` passes; `false` or a string (the reason) fails; throwing fails with the error message. */
export type HealthCheck = () => boolean | string | Promise<boolean | string>;

export type CheckResult = { readonly ok: true } | { readonly ok: false; readonly message: string };

export interface CheckReport {
  readonly ok: boolean;
  readonly checks: Readonly<Record<string, CheckResult>>;
}

export const DEFAULT_CHECK_TIMEOUT_MS = 2_000;

/** A named set of checks run concurrently, each bounded by a timeout. */
export class HealthChecks {
  readonly #checks = new Map<string, HealthCheck>();
  readonly #timeoutMs: number;

  constructor(timeoutMs: number = DEFAULT_CHECK_TIMEOUT_MS) {
    this.#timeoutMs = timeoutMs;
  }

  /** Registers a check; returns a function that removes it. */
  add(name: string, check: HealthCheck): () => void {
    if (this.#checks.has(name))
      throw new DuplicateCheckError(`check ${JSON.stringify(name)} is already registered`);
    this.#checks.set(name, check);
    return () => {
      if (this.#checks.get(name) === check) this.#checks.delete(name);
    };
  }

  get names(): string[] {
    return [...this.#checks.keys()];
  }

  async run(): Promise<CheckReport> {
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, check]) => [name, await this.#runOne(check)] as const),
    );
    return { ok: entries.every(([, r]) => r.ok), checks: Object.fromEntries(entries) };
  }

  async #runOne(check: HealthCheck): Promise<CheckResult> {
    let timer: NodeJS.Timeout | undefined;
    // A hung dependency must not hang the probe: Kubernetes would time out with no explanation.
    const timeout = new Promise<CheckResult>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, message: `timed out after ${this.#timeoutMs}ms` }),
        this.#timeoutMs,
      );
      timer.unref();
    });
    const attempt = (async (): Promise<CheckResult> => {
      try {
        const result = await check();
        if (result === true) return { ok: true };
        return { ok: false, message: typeof result === 'string' && result !== '' ? result : 'check failed' };
      } catch (err) {
        return { ok: false, message: err instanceof Error ? err.message : String(err) };
      }
    })();
    try {
      return await Promise.race([attempt, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
