export { createCertificateAuthority } from './authority.js';
export {
  CREDENTIAL_KINDS,
  CREDENTIAL_URI_PREFIX,
  type CredentialKind,
  type CredentialMarking,
  credentialUri,
  readCredentialMarking,
} from './credential-kind.js';
export { type CertificateDescription, describeCertificate } from './describe.js';
export { PkiError, PkiErrorCode, PkiErrors } from './errors.js';
export { issueCertificate } from './issue.js';
export type {
  CertificateAndKey,
  CertificateAuthority,
  CertificateUsage,
  CreateCertificateAuthorityOptions,
  IssueCertificateOptions,
} from './types.js';
export type { ValidityOptions } from './validity.js';
