/**
 * Stable codes for every way identity can be refused. They appear in `{ ok: false }`
 * results and on thrown errors; log pipelines and alerts match on them, so never rename.
 */

/** Malformed `x-forwarded-client-cert` values (thrown by `parseXfcc`). */
export const XfccErrorCode = {
  Empty: 'XFCC_EMPTY',
  HeaderTooLong: 'XFCC_HEADER_TOO_LONG',
  ValueTooLong: 'XFCC_VALUE_TOO_LONG',
  TooManyElements: 'XFCC_TOO_MANY_ELEMENTS',
  ControlCharacter: 'XFCC_CONTROL_CHARACTER',
  UnterminatedQuote: 'XFCC_UNTERMINATED_QUOTE',
  EmptyKey: 'XFCC_EMPTY_KEY',
  InvalidKey: 'XFCC_INVALID_KEY',
  MissingEquals: 'XFCC_MISSING_EQUALS',
  EmptyElement: 'XFCC_EMPTY_ELEMENT',
  EmptyPair: 'XFCC_EMPTY_PAIR',
  UnexpectedCharacter: 'XFCC_UNEXPECTED_CHARACTER',
  DuplicateKey: 'XFCC_DUPLICATE_KEY',
} as const;
export type XfccErrorCode = (typeof XfccErrorCode)[keyof typeof XfccErrorCode];

/** Invalid `--auth` specifications (thrown by `parseAuthMethod`). */
export const AuthMethodErrorCode = {
  Unknown: 'AUTH_METHOD_UNKNOWN',
  InvalidHeaderName: 'AUTH_METHOD_INVALID_HEADER_NAME',
  InvalidRegex: 'AUTH_METHOD_INVALID_REGEX',
  NoCaptureGroup: 'AUTH_METHOD_NO_CAPTURE_GROUP',
  MeshUnpinned: 'AUTH_METHOD_MESH_UNPINNED',
  Unsupported: 'AUTH_METHOD_UNSUPPORTED',
} as const;
export type AuthMethodErrorCode = (typeof AuthMethodErrorCode)[keyof typeof AuthMethodErrorCode];

/** Token problems (thrown by `TokenAuthority`). */
export const TokenErrorCode = {
  Malformed: 'TOKEN_MALFORMED',
  Expired: 'TOKEN_EXPIRED',
  NotYetValid: 'TOKEN_NOT_YET_VALID',
  BadSignature: 'TOKEN_BAD_SIGNATURE',
  WrongIssuer: 'TOKEN_WRONG_ISSUER',
  WrongAudience: 'TOKEN_WRONG_AUDIENCE',
  InvalidSubject: 'TOKEN_INVALID_SUBJECT',
  Revoked: 'TOKEN_REVOKED',
  InvalidKey: 'TOKEN_INVALID_KEY',
  InvalidRequest: 'TOKEN_INVALID_REQUEST',
} as const;
export type TokenErrorCode = (typeof TokenErrorCode)[keyof typeof TokenErrorCode];

/** Refusals returned (not thrown) while extracting an identity from a request. */
export const IdentityErrorCode = {
  HeaderMissing: 'AUTH_HEADER_MISSING',
  HeaderRepeated: 'AUTH_HEADER_REPEATED',
  HeaderEmpty: 'AUTH_HEADER_EMPTY',
  HeaderTooLong: 'AUTH_HEADER_TOO_LONG',
  HeaderControlCharacter: 'AUTH_HEADER_CONTROL_CHARACTER',
  HeaderNonAscii: 'AUTH_HEADER_NON_ASCII',
  HeaderMalformed: 'AUTH_HEADER_MALFORMED',
  XfccNoUri: 'AUTH_XFCC_NO_URI',
  XfccAmbiguous: 'AUTH_XFCC_AMBIGUOUS',
  NoMatch: 'AUTH_NO_MATCH',
  EmptyCapture: 'AUTH_EMPTY_CAPTURE',
  InvalidAgentName: 'AUTH_INVALID_AGENT_NAME',
  BearerMalformed: 'AUTH_BEARER_MALFORMED',
  PeerCertificateMissing: 'AUTH_PEER_CERT_MISSING',
  PeerCertificateInvalid: 'AUTH_PEER_CERT_INVALID',
  /** A credential of another kind (a caller's certificate on the agent listener…). */
  CredentialWrongKind: 'AUTH_CREDENTIAL_WRONG_KIND',
  /** A certificate with no kind marker where one is required. */
  CredentialUnmarked: 'AUTH_CREDENTIAL_KIND_MISSING',
  /** Several or malformed kind markers. */
  CredentialKindInvalid: 'AUTH_CREDENTIAL_KIND_INVALID',
  /** The kind marker names someone other than the identity the method extracted. */
  CredentialNameMismatch: 'AUTH_CREDENTIAL_NAME_MISMATCH',
} as const;
export type IdentityErrorCode = (typeof IdentityErrorCode)[keyof typeof IdentityErrorCode];

/** Any code a failed identity result may carry: XFCC and token codes pass through as-is. */
export type RejectionCode = IdentityErrorCode | XfccErrorCode | TokenErrorCode;

export type AuthErrorCode = XfccErrorCode | AuthMethodErrorCode | TokenErrorCode | IdentityErrorCode;

export class AuthError extends Error {
  override readonly name: string = 'AuthError';
  readonly code: AuthErrorCode;

  constructor(code: AuthErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export class XfccParseError extends AuthError {
  override readonly name = 'XfccParseError';
  declare readonly code: XfccErrorCode;

  /** Offset into the header where parsing stopped, for debugging (never log the value). */
  readonly offset: number;

  constructor(code: XfccErrorCode, message: string, offset: number) {
    super(code, message);
    this.offset = offset;
  }
}

export class AuthMethodError extends AuthError {
  override readonly name = 'AuthMethodError';
  declare readonly code: AuthMethodErrorCode;

  constructor(code: AuthMethodErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

export class TokenError extends AuthError {
  override readonly name = 'TokenError';
  declare readonly code: TokenErrorCode;

  constructor(code: TokenErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
