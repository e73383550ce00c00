import { IdentityErrorCode, type RejectionCode } from './errors.js';
import { IDENTITY_HEADER_MAX_BYTES } from './header-identity.js';
import { checkHeaderText } from './header-text.js';
import { type HeaderBag, headerValues } from './headers.js';
import { reject } from './identity.js';

export type BearerTokenResult =
  | { ok: true; token: string }
  | { ok: false; code: RejectionCode; reason: string };

// RFC 6750 b64token; exactly one space after the scheme.
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * Reads `authorization: Bearer <token>` strictly: one header, one token, nothing else.
 * Note that Node's HTTP/2 layer keeps only the first `authorization` header of a request,
 * so a duplicate is only visible here if the caller passes raw headers.
 */
export function extractBearerToken(headers: HeaderBag): BearerTokenResult {
  const values = headerValues(headers, 'authorization');
  if (values.length === 0) return reject(IdentityErrorCode.HEADER_MISSING, 'header authorization is missing');
  if (values.length > 1) {
    return reject(IdentityErrorCode.HEADER_REPEATED, `header authorization was sent ${values.length} times`);
  }
  const value = values[0] as string;
  if (value === '') return reject(IdentityErrorCode.HEADER_EMPTY, 'header authorization is empty');
  const bad = checkHeaderText('authorization', value, IDENTITY_HEADER_MAX_BYTES);
  if (bad) return bad;
  const match = BEARER.exec(value);
  if (!match) {
    return reject(
      IdentityErrorCode.BEARER_MALFORMED,
      'header authorization is not of the form "Bearer <token>"',
    );
  }
  return { ok: true, token: match[1] as string };
}
