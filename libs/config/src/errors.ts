/** One problem found while loading configuration; `message` is the full, user-facing line. */
export interface ConfigProblem {
  /** Flag name without dashes, when the problem concerns one option. */
  readonly option?: string;
  /** Where the offending value came from, e.g. `env ARGOCD_PRINCIPAL_LISTEN_PORT`. */
  readonly source?: string;
  readonly message: string;
}

/** Every invalid value found at startup, reported together so operators fix them in one go. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const n = problems.length;
    const header = `invalid configuration (${n} problem${n === 1 ? '' : 's'}):`;
    super([header, ...problems.map((p) => `  - ${p.message}`)].join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** A programming mistake in an option table (duplicate flag, bad default…); not an operator error. */
export class OptionDefinitionError extends Error {
  readonly code = 'CONFIG_OPTION_DEFINITION';

  constructor(message: string) {
    super(message);
    this.name = 'OptionDefinitionError';
  }
}

/** A string that is not a Go-style duration. */
export class InvalidDurationError extends Error {
  readonly code = 'CONFIG_INVALID_DURATION';

  constructor(reason: string) {
    super(reason);
    this.name = 'InvalidDurationError';
  }
}
