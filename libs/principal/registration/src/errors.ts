import { defineErrors, errorClass } from '@pullplane/errors';

export const RegistrationErrors = defineErrors('@pullplane/registration', {
  API_FAILED: {
    code: 'REGISTRATION_API_FAILED',
    status: 502,
    message: 'the Kubernetes API refused or failed a cluster Secret call',
  },
  INVALID_AGENT: {
    code: 'REGISTRATION_INVALID_AGENT',
    status: 400,
    message: 'the agent name cannot name a cluster',
  },
});
export const RegistrationErrorCode = RegistrationErrors.codes;
export type RegistrationErrorCode = (typeof RegistrationErrorCode)[keyof typeof RegistrationErrorCode];

export class RegistrationError extends errorClass(RegistrationErrors) {}
