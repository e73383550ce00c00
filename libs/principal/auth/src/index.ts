/** Re-exported so services need not depend on the issuing library to name a kind. */
export type { CredentialKind } from '@pullplane/pki';
export {
  type AuthMethod,
  type CallerAuthFlags,
  DEFAULT_AUTH_SPEC,
  type HeaderAuthMethod,
  type MeshPinning,
  type MtlsAuthMethod,
  type MtlsCommonNameMethod,
  type MtlsSubjectMethod,
  type MtlsUriMethod,
  type ParseAuthOptions,
  parseAuthMethod,
  parseCallerAuthMethod,
  presetAuthSpec,
  type TokenAuthMethod,
  UNPINNED_PRESET_SPECS,
} from './auth-method.js';
export { type BearerTokenResult, extractBearerToken } from './bearer.js';
export {
  type DenyEntry,
  type DenyList,
  InMemoryDenyList,
  type InMemoryDenyListOptions,
} from './deny-list.js';
export {
  AuthError,
  type AuthErrorCode,
  AuthMethodError,
  AuthMethodErrorCode,
  AuthMethodErrors,
  IdentityErrorCode,
  IdentityErrors,
  type RejectionCode,
  TokenError,
  TokenErrorCode,
  TokenErrors,
  XfccErrorCode,
  XfccErrors,
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
export { type ExchangeGrant, type ExchangeRevocation, OpenExchanges } from './open-exchanges.js';
export {
  type CredentialKindPolicy,
  identityFromPeerCertificate,
  type PeerCertificateInput,
} from './peer-identity.js';
export {
  type PlaintextListenerSettings,
  plaintextListenerProblems,
  plaintextListenerWarnings,
} from './plaintext-listener.js';
export {
  type IssueTokenOptions,
  TOKEN_ISSUER,
  type TokenAlgorithm,
  TokenAuthority,
  type TokenAuthorityOptions,
  type VerifiedToken,
} from './token-authority.js';
export { CachedTokenVerifier, type CachedTokenVerifierOptions } from './token-cache.js';
export { AGENT_TOKEN_AUDIENCE, CALLER_TOKEN_AUDIENCE, identityFromBearerToken } from './token-identity.js';
export { ReloadableTokenVerifier, type TokenVerifier, verifierByIssuer } from './token-verifier.js';
export {
  parseXfcc,
  XFCC_MAX_ELEMENTS,
  XFCC_MAX_HEADER_BYTES,
  XFCC_MAX_VALUE_BYTES,
  type XfccElement,
  type XfccParseOptions,
} from './xfcc-parser.js';
