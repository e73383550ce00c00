export const RegistrationErrorCode = {
  API_FAILED: 'REGISTRATION_API_FAILED',
  INVALID_AGENT: 'REGISTRATION_INVALID_AGENT',
} as const;
export type RegistrationErrorCode = (typeof RegistrationErrorCode)[keyof typeof RegistrationErrorCode];

export class RegistrationError extends Error {
  override readonly name = 'RegistrationError';
  constructor(
    readonly code: RegistrationErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
