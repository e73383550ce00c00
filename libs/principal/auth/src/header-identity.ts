import type { HeaderAuthMethod } from './auth-method.js';
import { IdentityErrorCode, XfccParseError } from './errors.js';
import { checkHeaderText } from './header-text.js';
import { type HeaderBag, headerValues } from './headers.js';
import { type IdentityResult, identityFromMatch, quote, reject } from './identity.js';
import { parseXfcc, XFCC_MAX_HEADER_BYTES, type XfccElement } from './xfcc-parser.js';

export const XFCC_HEADER = 'x-forwarded-client-cert';
export const L5D_CLIENT_ID_HEADER = 'l5d-client-id';
/** Limit for identity headers other than XFCC (which carries certificates and gets 16 KiB). */
export const IDENTITY_HEADER_MAX_BYTES = 8 * 1024;

const LABEL = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';
/** `<service-account>.<namespace>.serviceaccount.identity.<trust-domain>` */
const L5D_IDENTITY = new RegExp(
  `^${LABEL}\\.${LABEL}\\.serviceaccount\\.identity\\.${LABEL}(?:\\.${LABEL})*$`,
);
/**
 * RFC 3986 characters minus `,` `;` `=`: SPIFFE IDs never contain those, and allowing them
 * would let one URI value smuggle a second `URI=` past the pattern.
 */
const URI_VALUE = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+%]+$/;

/**
 * Extracts the agent name from a header set by a trusted proxy (Istio, Linkerd, or a custom
 * header). Only the proxy's own contribution can yield an identity:
 * - `x-forwarded-client-cert` is parsed and only the URI of its last element (appended by
 *   the nearest proxy) is matched, as `URI=<value>`, so Subject, By, or elements a client
 *   forwarded itself never reach the pattern; an element with several URIs is ambiguous
 *   and refused;
 * - other headers must carry exactly one value with no list separator;
 * - `l5d-client-id` must also have Linkerd's identity shape.
 * Never throws; every refusal has a stable code and a loggable reason.
 */
export function extractHeaderIdentity(method: HeaderAuthMethod, headers: HeaderBag): IdentityResult {
  const name = method.header;
  const values = headerValues(headers, name);
  if (values.length === 0) return reject(IdentityErrorCode.HEADER_MISSING, `header ${name} is missing`);
  if (values.length > 1) {
    return reject(IdentityErrorCode.HEADER_REPEATED, `header ${name} was sent ${values.length} times`);
  }
  const value = values[0] as string;
  if (value === '') return reject(IdentityErrorCode.HEADER_EMPTY, `header ${name} is empty`);

  const limit = name === XFCC_HEADER ? XFCC_MAX_HEADER_BYTES : IDENTITY_HEADER_MAX_BYTES;
  const bad = checkHeaderText(name, value, limit);
  if (bad) return bad;
  if (value.trim() !== value) {
    return reject(IdentityErrorCode.HEADER_MALFORMED, `header ${name} has leading or trailing whitespace`);
  }

  if (name === XFCC_HEADER) return fromXfcc(method, value);

  if (value.includes(',')) {
    // A proxy or transport folds repeated headers into one, comma-joined.
    return reject(IdentityErrorCode.HEADER_REPEATED, `header ${name} holds several comma-separated values`);
  }
  const match = method.pattern.exec(value);
  if (!match) {
    return reject(
      IdentityErrorCode.NO_MATCH,
      `header ${name} value ${quote(value)} does not match ${quote(method.pattern.source)}`,
    );
  }
  const result = identityFromMatch(match, 'header', value, `header ${name}`);
  if (result.ok && name === L5D_CLIENT_ID_HEADER && !L5D_IDENTITY.test(value)) {
    return reject(
      IdentityErrorCode.HEADER_MALFORMED,
      `header ${name} value ${quote(value)} is not a Linkerd identity (<sa>.<ns>.serviceaccount.identity.<domain>)`,
    );
  }
  return result;
}

function fromXfcc(method: HeaderAuthMethod, value: string): IdentityResult {
  let elements: XfccElement[];
  try {
    elements = parseXfcc(value);
  } catch (err) {
    if (err instanceof XfccParseError) {
      return reject(err.code, `header ${XFCC_HEADER} is malformed: ${err.message}`);
    }
    throw err;
  }
  const nearest = elements[elements.length - 1] as XfccElement;
  if (nearest.uri.length === 0) {
    return reject(
      IdentityErrorCode.XFCC_NO_URI,
      `the last ${XFCC_HEADER} element (added by the nearest proxy) has no URI`,
    );
  }
  for (const uri of nearest.uri) {
    if (!URI_VALUE.test(uri)) {
      return reject(
        IdentityErrorCode.HEADER_MALFORMED,
        `${XFCC_HEADER} URI ${quote(uri)} contains characters not allowed in a SPIFFE URI`,
      );
    }
  }
  // A certificate with several URI SANs leaves "who is this" to whichever the pattern meets
  // first, so the answer would depend on their order: refuse to guess.
  if (nearest.uri.length > 1) {
    return reject(
      IdentityErrorCode.XFCC_AMBIGUOUS,
      `the last ${XFCC_HEADER} element carries ${nearest.uri.length} URIs (${nearest.uri.map((u) => quote(u)).join(', ')}); exactly one is required`,
    );
  }
  const uri = nearest.uri[0] as string;
  const match = method.pattern.exec(`URI=${uri}`);
  if (match) return identityFromMatch(match, 'header', uri, `${XFCC_HEADER} URI ${quote(uri)}`);
  return reject(
    IdentityErrorCode.NO_MATCH,
    `the URI ${quote(uri)} of the last ${XFCC_HEADER} element does not match ${quote(method.pattern.source)}`,
  );
}
