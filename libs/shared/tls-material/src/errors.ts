import { defineErrors, errorClass } from '@pullplane/errors';

export const MaterialErrors = defineErrors('@pullplane/tls-material', {
  NOT_FOUND: {
    code: 'TLS_MATERIAL_NOT_FOUND',
    status: 500,
    message: 'the file or Secret is missing, or lacks a key',
  },
  INVALID: {
    code: 'TLS_MATERIAL_INVALID',
    status: 500,
    message: 'the material is not what it should be (not PEM, key does not match the certificate…)',
  },
  UNAVAILABLE: {
    code: 'TLS_MATERIAL_UNAVAILABLE',
    status: 503,
    message: 'the Kubernetes API refused or could not be reached',
  },
});
export const MaterialErrorCode = MaterialErrors.codes;
export type MaterialErrorCode = (typeof MaterialErrorCode)[keyof typeof MaterialErrorCode];

/** TLS material or a signing key that cannot be used; the message names where it came from. */
export class MaterialError extends errorClass(MaterialErrors) {}
