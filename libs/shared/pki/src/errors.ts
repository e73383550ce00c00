import { defineErrors, errorClass } from '@pullplane/errors';

/** Stable error codes of @pullplane/pki; callers match on these, never on messages. */
export const PkiErrors = defineErrors('@pullplane/pki', {
  INVALID_INPUT: {
    code: 'PKI_INVALID_INPUT',
    status: 400,
    message: 'a name, key usage or option is not valid',
  },
  INVALID_VALIDITY: {
    code: 'PKI_INVALID_VALIDITY',
    status: 400,
    message: 'the validity period is not valid',
  },
  INVALID_SERIAL: { code: 'PKI_INVALID_SERIAL', status: 400, message: 'the serial number is not valid' },
  CERTIFICATE_PARSE: {
    code: 'PKI_CERTIFICATE_PARSE_FAILED',
    status: 400,
    message: 'the certificate cannot be parsed',
  },
  KEY_PARSE: { code: 'PKI_KEY_PARSE_FAILED', status: 400, message: 'the private key cannot be parsed' },
  UNSUPPORTED_KEY: {
    code: 'PKI_UNSUPPORTED_KEY',
    status: 400,
    message: 'the key algorithm is not supported',
  },
  KEY_MISMATCH: {
    code: 'PKI_KEY_MISMATCH',
    status: 400,
    message: 'the key does not belong to the certificate',
  },
  NOT_A_CERTIFICATE_AUTHORITY: {
    code: 'PKI_NOT_A_CERTIFICATE_AUTHORITY',
    status: 400,
    message: 'the certificate cannot sign certificates (not a CA)',
  },
});
export const PkiErrorCode = PkiErrors.codes;
export type PkiErrorCode = (typeof PkiErrorCode)[keyof typeof PkiErrorCode];

export class PkiError extends errorClass(PkiErrors) {}
