/** Stable error codes of @pullplane/pki; callers match on these, never on messages. */
export const PkiErrorCode = {
  InvalidInput: 'PKI_INVALID_INPUT',
  InvalidValidity: 'PKI_INVALID_VALIDITY',
  InvalidSerial: 'PKI_INVALID_SERIAL',
  CertificateParse: 'PKI_CERTIFICATE_PARSE_FAILED',
  KeyParse: 'PKI_KEY_PARSE_FAILED',
  UnsupportedKey: 'PKI_UNSUPPORTED_KEY',
  KeyMismatch: 'PKI_KEY_MISMATCH',
  NotACertificateAuthority: 'PKI_NOT_A_CERTIFICATE_AUTHORITY',
} as const;
export type PkiErrorCode = (typeof PkiErrorCode)[keyof typeof PkiErrorCode];

export class PkiError extends Error {
  override readonly name = 'PkiError';
  readonly code: PkiErrorCode;

  constructor(code: PkiErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
