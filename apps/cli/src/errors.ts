import { codeErrorClass, defineErrors } from '@pullplane/errors';

export const CliErrors = defineErrors('@pullplane/app-cli', {
  USAGE: { code: 'CLI_USAGE', status: 400, message: 'the command line is not valid (exit status 2)' },
});

/** A command line that cannot work; printed without a stack, exit status 2. */
export class UsageError extends codeErrorClass(CliErrors, CliErrors.codes.USAGE) {}
