import { defineErrors, errorClass } from '@pullplane/errors';

/**
 * Stable codes for every way identity can be refused. They appear in `{ ok: false }`
 * results and on thrown errors; log pipelines and alerts match on them, so never rename.
 */

/** Malformed `x-forwarded-client-cert` values (thrown by `parseXfcc`). */
export const XfccErrors = defineErrors('@pullplane/auth', {
  EMPTY: { code: 'XFCC_EMPTY', status: 401, message: 'the x-forwarded-client-cert header is empty' },
  HEADER_TOO_LONG: {
    code: 'XFCC_HEADER_TOO_LONG',
    status: 401,
    message: 'the x-forwarded-client-cert header is too long',
  },
  VALUE_TOO_LONG: {
    code: 'XFCC_VALUE_TOO_LONG',
    status: 401,
    message: 'a value in x-forwarded-client-cert is too long',
  },
  TOO_MANY_ELEMENTS: {
    code: 'XFCC_TOO_MANY_ELEMENTS',
    status: 401,
    message: 'x-forwarded-client-cert holds too many elements',
  },
  CONTROL_CHARACTER: {
    code: 'XFCC_CONTROL_CHARACTER',
    status: 401,
    message: 'x-forwarded-client-cert holds a control character',
  },
  UNTERMINATED_QUOTE: {
    code: 'XFCC_UNTERMINATED_QUOTE',
    status: 401,
    message: 'x-forwarded-client-cert has an unterminated quote',
  },
  EMPTY_KEY: {
    code: 'XFCC_EMPTY_KEY',
    status: 401,
    message: 'an x-forwarded-client-cert pair has an empty key',
  },
  INVALID_KEY: {
    code: 'XFCC_INVALID_KEY',
    status: 401,
    message: 'an x-forwarded-client-cert key is not one Envoy writes',
  },
  MISSING_EQUALS: {
    code: 'XFCC_MISSING_EQUALS',
    status: 401,
    message: 'an x-forwarded-client-cert pair has no =',
  },
  EMPTY_ELEMENT: {
    code: 'XFCC_EMPTY_ELEMENT',
    status: 401,
    message: 'x-forwarded-client-cert has an empty element',
  },
  EMPTY_PAIR: { code: 'XFCC_EMPTY_PAIR', status: 401, message: 'x-forwarded-client-cert has an empty pair' },
  UNEXPECTED_CHARACTER: {
    code: 'XFCC_UNEXPECTED_CHARACTER',
    status: 401,
    message: 'x-forwarded-client-cert has a character where none may be',
  },
  DUPLICATE_KEY: {
    code: 'XFCC_DUPLICATE_KEY',
    status: 401,
    message: 'an x-forwarded-client-cert element repeats a key',
  },
});
export const XfccErrorCode = XfccErrors.codes;
export type XfccErrorCode = (typeof XfccErrorCode)[keyof typeof XfccErrorCode];

/** Invalid `--auth` specifications (thrown by `parseAuthMethod`). */
export const AuthMethodErrors = defineErrors('@pullplane/auth', {
  UNKNOWN: {
    code: 'AUTH_METHOD_UNKNOWN',
    status: 500,
    message: 'the --auth method is not one this service knows',
  },
  INVALID_HEADER_NAME: {
    code: 'AUTH_METHOD_INVALID_HEADER_NAME',
    status: 500,
    message: 'the --auth header name is not a valid HTTP header name',
  },
  INVALID_REGEX: {
    code: 'AUTH_METHOD_INVALID_REGEX',
    status: 500,
    message: 'the --auth pattern is not a valid regular expression',
  },
  NO_CAPTURE_GROUP: {
    code: 'AUTH_METHOD_NO_CAPTURE_GROUP',
    status: 500,
    message: 'the --auth pattern has no capture group for the name',
  },
  MESH_UNPINNED: {
    code: 'AUTH_METHOD_MESH_UNPINNED',
    status: 500,
    message: 'a mesh identity method without pinned namespaces and trust domain',
  },
  UNSUPPORTED: {
    code: 'AUTH_METHOD_UNSUPPORTED',
    status: 500,
    message: 'the --auth method is not supported on this listener',
  },
});
export const AuthMethodErrorCode = AuthMethodErrors.codes;
export type AuthMethodErrorCode = (typeof AuthMethodErrorCode)[keyof typeof AuthMethodErrorCode];

/** Token problems (thrown by `TokenAuthority`). */
export const TokenErrors = defineErrors('@pullplane/auth', {
  MALFORMED: { code: 'TOKEN_MALFORMED', status: 401, message: 'the token is not a well-formed JWT' },
  EXPIRED: { code: 'TOKEN_EXPIRED', status: 401, message: 'the token has expired' },
  NOT_YET_VALID: { code: 'TOKEN_NOT_YET_VALID', status: 401, message: 'the token is not valid yet' },
  BAD_SIGNATURE: { code: 'TOKEN_BAD_SIGNATURE', status: 401, message: 'the token signature does not verify' },
  WRONG_ISSUER: { code: 'TOKEN_WRONG_ISSUER', status: 401, message: 'the token was issued by someone else' },
  WRONG_AUDIENCE: { code: 'TOKEN_WRONG_AUDIENCE', status: 401, message: 'the token is for another service' },
  INVALID_SUBJECT: {
    code: 'TOKEN_INVALID_SUBJECT',
    status: 401,
    message: 'the token subject or agent list is not valid',
  },
  REVOKED: { code: 'TOKEN_REVOKED', status: 401, message: 'the token has been revoked' },
  INVALID_KEY: {
    code: 'TOKEN_INVALID_KEY',
    status: 500,
    message: 'the signing or verification key cannot be used',
  },
  INVALID_REQUEST: { code: 'TOKEN_INVALID_REQUEST', status: 400, message: 'the token request is not valid' },
});
export const TokenErrorCode = TokenErrors.codes;
export type TokenErrorCode = (typeof TokenErrorCode)[keyof typeof TokenErrorCode];

/** Refusals returned (not thrown) while extracting an identity from a request. */
export const IdentityErrors = defineErrors('@pullplane/auth', {
  HEADER_MISSING: { code: 'AUTH_HEADER_MISSING', status: 401, message: 'the identity header is missing' },
  HEADER_REPEATED: {
    code: 'AUTH_HEADER_REPEATED',
    status: 401,
    message: 'the identity header appears more than once',
  },
  HEADER_EMPTY: { code: 'AUTH_HEADER_EMPTY', status: 401, message: 'the identity header is empty' },
  HEADER_TOO_LONG: { code: 'AUTH_HEADER_TOO_LONG', status: 401, message: 'the identity header is too long' },
  HEADER_CONTROL_CHARACTER: {
    code: 'AUTH_HEADER_CONTROL_CHARACTER',
    status: 401,
    message: 'the identity header holds a control character',
  },
  HEADER_NON_ASCII: {
    code: 'AUTH_HEADER_NON_ASCII',
    status: 401,
    message: 'the identity header holds non-ASCII bytes',
  },
  HEADER_MALFORMED: {
    code: 'AUTH_HEADER_MALFORMED',
    status: 401,
    message: 'the identity header is malformed',
  },
  XFCC_NO_URI: {
    code: 'AUTH_XFCC_NO_URI',
    status: 401,
    message: 'x-forwarded-client-cert names no URI identity',
  },
  XFCC_AMBIGUOUS: {
    code: 'AUTH_XFCC_AMBIGUOUS',
    status: 401,
    message: 'x-forwarded-client-cert names several identities',
  },
  NO_MATCH: { code: 'AUTH_NO_MATCH', status: 401, message: 'the identity does not match the --auth pattern' },
  EMPTY_CAPTURE: {
    code: 'AUTH_EMPTY_CAPTURE',
    status: 401,
    message: 'the --auth pattern captured an empty name',
  },
  INVALID_AGENT_NAME: {
    code: 'AUTH_INVALID_AGENT_NAME',
    status: 401,
    message: 'the name is not a DNS label',
  },
  BEARER_MALFORMED: {
    code: 'AUTH_BEARER_MALFORMED',
    status: 401,
    message: 'the Authorization header is not a well-formed bearer token',
  },
  PEER_CERTIFICATE_MISSING: {
    code: 'AUTH_PEER_CERT_MISSING',
    status: 401,
    message: 'no client certificate was presented',
  },
  PEER_CERTIFICATE_INVALID: {
    code: 'AUTH_PEER_CERT_INVALID',
    status: 401,
    message: 'the client certificate names no usable identity',
  },
  CREDENTIAL_WRONG_KIND: {
    code: 'AUTH_CREDENTIAL_WRONG_KIND',
    status: 403,
    message: 'a credential of another kind (a caller certificate on the agent listener…)',
  },
  CREDENTIAL_UNMARKED: {
    code: 'AUTH_CREDENTIAL_KIND_MISSING',
    status: 401,
    message: 'a certificate with no kind marker where one is required',
  },
  CREDENTIAL_KIND_INVALID: {
    code: 'AUTH_CREDENTIAL_KIND_INVALID',
    status: 401,
    message: 'several or malformed kind markers',
  },
  CREDENTIAL_NAME_MISMATCH: {
    code: 'AUTH_CREDENTIAL_NAME_MISMATCH',
    status: 403,
    message: 'the kind marker names someone other than the authenticated identity',
  },
});
export const IdentityErrorCode = IdentityErrors.codes;
export type IdentityErrorCode = (typeof IdentityErrorCode)[keyof typeof IdentityErrorCode];

/** Any code a failed identity result may carry: XFCC and token codes pass through as-is. */
export type RejectionCode = IdentityErrorCode | XfccErrorCode | TokenErrorCode;

export type AuthErrorCode = XfccErrorCode | AuthMethodErrorCode | TokenErrorCode | IdentityErrorCode;

export class AuthError extends errorClass([XfccErrors, AuthMethodErrors, TokenErrors, IdentityErrors]) {}

export class XfccParseError extends errorClass(XfccErrors, AuthError) {
  /** Offset into the header where parsing stopped, for debugging (never log the value). */
  readonly offset: number;

  constructor(code: XfccErrorCode, message: string, offset: number) {
    super(code, message);
    this.offset = offset;
  }
}

export class AuthMethodError extends errorClass(AuthMethodErrors, AuthError) {}

export class TokenError extends errorClass(TokenErrors, AuthError) {}
