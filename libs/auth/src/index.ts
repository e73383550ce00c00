export {
  AUTH_PRESETS,
  type AuthMethod,
  DEFAULT_AUTH_SPEC,
  type HeaderAuthMethod,
  type MtlsAuthMethod,
  type MtlsCommonNameMethod,
  type MtlsSubjectMethod,
  type MtlsUriMethod,
  parseAuthMethod,
  type TokenAuthMethod,
} from './auth-method.js';
export { type BearerTokenResult, extractBearerToken } from './bearer.js';
export {
  type DenyEntry,
  type DenyList,
  InMemoryDenyList,
  type InMemoryDenyListOptions,
} from './deny-list.js';
export { isDnsLabel } from './dns-label.js';
export {
  AuthError,
  type AuthErrorCode,
  AuthMethodError,
  AuthMethodErrorCode,
  IdentityErrorCode,
  type RejectionCode,
  TokenError,
  TokenErrorCode,
  XfccErrorCode,
  XfccParseError,
} from './errors.js';
export {
  extractHeaderIdentity,
  IDENTITY_HEADER_MAX_BYTES,
  L5D_CLIENT_ID_HEADER,
  XFCC_HEADER,
} from './header-identity.js';
export { type HeaderBag, headersFromGrpcMetadata, headerValues } from './headers.js';
export type { AgentIdentity, IdentityResult, IdentitySource } from './identity.js';
export { identityFromPeerCertificate, type PeerCertificateInput } from './peer-identity.js';
export {
  type IssueTokenOptions,
  TOKEN_ISSUER,
  TokenAuthority,
  type TokenAuthorityOptions,
  type VerifiedToken,
} from './token-authority.js';
export { identityFromBearerToken } from './token-identity.js';
export {
  parseXfcc,
  XFCC_MAX_ELEMENTS,
  XFCC_MAX_HEADER_BYTES,
  XFCC_MAX_VALUE_BYTES,
  type XfccElement,
  type XfccParseOptions,
} from './xfcc-parser.js';
