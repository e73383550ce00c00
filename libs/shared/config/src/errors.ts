import { codeErrorClass, defineErrors } from '@pullplane/errors';

export const ConfigErrors = defineErrors('@pullplane/config', {
  INVALID: {
    code: 'CONFIG_INVALID',
    status: 500,
    message: 'the configuration holds invalid values (every problem is listed at once)',
  },
  OPTION_DEFINITION: {
    code: 'CONFIG_OPTION_DEFINITION',
    status: 500,
    message: 'an option table is wrong (duplicate flag, bad default…): a programming mistake',
  },
  INVALID_DURATION: {
    code: 'CONFIG_INVALID_DURATION',
    status: 400,
    message: 'the value is not a Go-style duration',
  },
});
export type ConfigErrorCode = (typeof ConfigErrors.codes)[keyof typeof ConfigErrors.codes];

/** One problem found while loading configuration; `message` is the full, user-facing line. */
export interface ConfigProblem {
  /** Flag name without dashes, when the problem concerns one option. */
  readonly option?: string;
  /** Where the offending value came from, e.g. `env ARGOCD_PRINCIPAL_LISTEN_PORT`. */
  readonly source?: string | undefined;
  readonly message: string;
}

/** Every invalid value found at startup, reported together so operators fix them in one go. */
export class ConfigError extends codeErrorClass(ConfigErrors, ConfigErrors.codes.INVALID) {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const n = problems.length;
    const header = `invalid configuration (${n} problem${n === 1 ? '' : 's'}):`;
    super([header, ...problems.map((p) => `  - ${p.message}`)].join('\n'));
    this.problems = problems;
  }
}

/** A programming mistake in an option table (duplicate flag, bad default…); not an operator error. */
export class OptionDefinitionError extends codeErrorClass(
  ConfigErrors,
  ConfigErrors.codes.OPTION_DEFINITION,
) {}

/** A string that is not a Go-style duration. */
export class InvalidDurationError extends codeErrorClass(ConfigErrors, ConfigErrors.codes.INVALID_DURATION) {}
