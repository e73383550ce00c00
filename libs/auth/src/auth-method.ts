import { AuthMethodError, AuthMethodErrorCode } from './errors.js';

/** Agent = client certificate subject CN (the default). */
export interface MtlsCommonNameMethod {
  kind: 'mtls';
  match: 'common-name';
  spec: string;
}

/** Agent = capture group 1 of `pattern` applied to the RFC 4514 subject (`mtls:<regex>`). */
export interface MtlsSubjectMethod {
  kind: 'mtls';
  match: 'subject';
  pattern: RegExp;
  spec: string;
}

/** Agent = capture group 1 of `pattern` on the first matching URI SAN (`mtls:uri:<regex>`). */
export interface MtlsUriMethod {
  kind: 'mtls';
  match: 'uri';
  pattern: RegExp;
  spec: string;
}

export type MtlsAuthMethod = MtlsCommonNameMethod | MtlsSubjectMethod | MtlsUriMethod;

/** Agent = capture group 1 of `pattern` on a header set by a trusted proxy (`header:<name>:<regex>`). */
export interface HeaderAuthMethod {
  kind: 'header';
  /** Lower-cased. */
  header: string;
  pattern: RegExp;
  /** Set when the spec was a preset name, for logs. */
  preset?: 'istio' | 'linkerd';
  spec: string;
}

/** Agent = `sub` of a bearer JWT issued by the gateway's TokenAuthority. */
export interface TokenAuthMethod {
  kind: 'token';
  spec: string;
}

export type AuthMethod = MtlsAuthMethod | HeaderAuthMethod | TokenAuthMethod;

export const DEFAULT_AUTH_SPEC = 'mtls';

/** Expansions of the presets, verbatim from argocd-agent's service-mesh guide. */
export const AUTH_PRESETS = {
  istio: 'header:x-forwarded-client-cert:^.*URI=spiffe://[^/]+/ns/[^/]+/sa/([^,;]+)',
  linkerd: 'header:l5d-client-id:^([^.]+)\\..*',
} as const;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Parses the gateway's `--auth` flag. Forms: `mtls`, `mtls:<regex>`, `mtls:uri:<regex>`,
 * `header:<name>:<regex>`, `istio`, `linkerd`, `token`. Only the first two colons of a
 * header spec separate fields, so the regex itself may contain colons.
 *
 * @throws AuthMethodError naming what is wrong, for a startup error message.
 */
export function parseAuthMethod(spec: string): AuthMethod {
  if (spec === 'mtls') return { kind: 'mtls', match: 'common-name', spec };
  if (spec === 'token') return { kind: 'token', spec };
  if (spec === 'istio' || spec === 'linkerd') {
    const method = parseHeaderSpec(AUTH_PRESETS[spec], AUTH_PRESETS[spec].slice('header:'.length));
    return { ...method, preset: spec, spec };
  }
  if (spec.startsWith('mtls:uri:')) {
    return { kind: 'mtls', match: 'uri', pattern: compile(spec.slice('mtls:uri:'.length), spec), spec };
  }
  if (spec.startsWith('mtls:')) {
    return { kind: 'mtls', match: 'subject', pattern: compile(spec.slice('mtls:'.length), spec), spec };
  }
  if (spec.startsWith('header:')) return parseHeaderSpec(spec, spec.slice('header:'.length));
  throw new AuthMethodError(
    AuthMethodErrorCode.Unknown,
    `unknown auth method ${JSON.stringify(spec)}: expected mtls, mtls:<regex>, mtls:uri:<regex>, header:<name>:<regex>, istio, linkerd or token`,
  );
}

function parseHeaderSpec(spec: string, rest: string): HeaderAuthMethod {
  const colon = rest.indexOf(':');
  if (colon === -1) {
    throw new AuthMethodError(
      AuthMethodErrorCode.InvalidRegex,
      `auth method ${JSON.stringify(spec)} has no regex: expected header:<name>:<regex>`,
    );
  }
  const name = rest.slice(0, colon);
  if (!TOKEN.test(name)) {
    throw new AuthMethodError(
      AuthMethodErrorCode.InvalidHeaderName,
      `auth method ${JSON.stringify(spec)}: ${JSON.stringify(name)} is not a valid header name`,
    );
  }
  return { kind: 'header', header: name.toLowerCase(), pattern: compile(rest.slice(colon + 1), spec), spec };
}

function compile(source: string, spec: string): RegExp {
  if (source === '') {
    throw new AuthMethodError(
      AuthMethodErrorCode.InvalidRegex,
      `auth method ${JSON.stringify(spec)} has an empty regex`,
    );
  }
  let pattern: RegExp;
  try {
    pattern = new RegExp(source);
  } catch (cause) {
    throw new AuthMethodError(
      AuthMethodErrorCode.InvalidRegex,
      `auth method ${JSON.stringify(spec)}: invalid regex: ${(cause as Error).message}`,
      { cause },
    );
  }
  // An alternation with the empty pattern always matches, exposing the group count.
  const groups = (new RegExp(`${source}|`).exec('')?.length ?? 1) - 1;
  if (groups < 1) {
    throw new AuthMethodError(
      AuthMethodErrorCode.NoCaptureGroup,
      `auth method ${JSON.stringify(spec)}: the regex needs a capture group for the agent name`,
    );
  }
  return pattern;
}
