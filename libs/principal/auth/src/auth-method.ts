import { AuthMethodError, AuthMethodErrorCode } from './errors.js';

/** Agent = client certificate subject CN (the default). */
export interface MtlsCommonNameMethod {
  kind: 'mtls';
  match: 'common-name';
  spec: string;
}

/**
 * Agent = capture group 1 of `pattern` applied to the RFC 4514 subject (`mtls:subject:<regex>`,
 * or argocd-agent's older `mtls:<regex>`).
 */
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
  /** The trust domain and namespaces a preset was pinned to. */
  pinning?: MeshPinning;
  spec: string;
}

/** Agent = `sub` of a bearer JWT issued by the gateway's TokenAuthority. */
export interface TokenAuthMethod {
  kind: 'token';
  spec: string;
}

export type AuthMethod = MtlsAuthMethod | HeaderAuthMethod | TokenAuthMethod;

export const DEFAULT_AUTH_SPEC = 'mtls';

/**
 * The seed's expansions of the presets, kept for reference and for operators who pass them
 * explicitly as `header:…`: they accept any trust domain and any namespace, so the presets
 * themselves are pinned instead (see `MeshPinning`).
 */
export const UNPINNED_PRESET_SPECS = {
  istio: 'header:x-forwarded-client-cert:^.*URI=spiffe://[^/]+/ns/[^/]+/sa/([^,;]+)',
  linkerd: 'header:l5d-client-id:^([^.]+)\\..*',
} as const;

/**
 * Whose mesh identities a preset admits: a workload with the right service account name in
 * another namespace, or from another trust domain, is someone else.
 */
export interface MeshPinning {
  /** Istio's trust domain (`spiffe://<trust-domain>/…`); Linkerd's identity trust domain. */
  trustDomain: string;
  /** Namespaces the identities live in (at least one). */
  namespaces: readonly string[];
}

export interface ParseAuthOptions {
  /** Required for the `istio` and `linkerd` presets. */
  mesh?: MeshPinning | undefined;
}

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The header spec a pinned preset stands for. */
export function presetAuthSpec(preset: 'istio' | 'linkerd', mesh: MeshPinning): string {
  const namespaces = `(?:${mesh.namespaces.map(escapeRegex).join('|')})`;
  const td = escapeRegex(mesh.trustDomain);
  return preset === 'istio'
    ? `header:x-forwarded-client-cert:^URI=spiffe://${td}/ns/${namespaces}/sa/([^/]+)$`
    : `header:l5d-client-id:^([^.]+)\\.${namespaces}\\.serviceaccount\\.identity\\.linkerd\\.${td}$`;
}

function checkPinning(spec: string, mesh: MeshPinning | undefined): MeshPinning {
  if (!mesh?.trustDomain || mesh.namespaces.length === 0) {
    throw new AuthMethodError(
      AuthMethodErrorCode.MESH_UNPINNED,
      `auth method ${JSON.stringify(spec)} needs the trust domain and the namespace(s) of the identities it admits (otherwise any workload whose service account has the right name is accepted)`,
    );
  }
  const td = mesh.trustDomain.split('.');
  if (mesh.trustDomain.length > 253 || !td.every((l) => LABEL.test(l))) {
    throw new AuthMethodError(
      AuthMethodErrorCode.MESH_UNPINNED,
      `auth method ${JSON.stringify(spec)}: trust domain ${JSON.stringify(mesh.trustDomain)} is not a DNS name`,
    );
  }
  for (const ns of mesh.namespaces) {
    if (!LABEL.test(ns)) {
      throw new AuthMethodError(
        AuthMethodErrorCode.MESH_UNPINNED,
        `auth method ${JSON.stringify(spec)}: namespace ${JSON.stringify(ns)} is not a DNS label`,
      );
    }
  }
  return { trustDomain: mesh.trustDomain, namespaces: [...mesh.namespaces] };
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Parses the gateway's `--auth` flag. Forms: `mtls`, `mtls:subject:<regex>` (and the older
 * `mtls:<regex>`, both on the subject), `mtls:uri:<regex>`,
 * `header:<name>:<regex>`, `istio`, `linkerd`, `token`. Only the first two colons of a
 * header spec separate fields, so the regex itself may contain colons. The presets need
 * `options.mesh`; an explicit `header:…` spec is taken as given.
 *
 * @throws AuthMethodError naming what is wrong, for a startup error message.
 */
export function parseAuthMethod(spec: string, options: ParseAuthOptions = {}): AuthMethod {
  if (spec === 'mtls') return { kind: 'mtls', match: 'common-name', spec };
  if (spec === 'token') return { kind: 'token', spec };
  if (spec === 'istio' || spec === 'linkerd') {
    const pinning = checkPinning(spec, options.mesh);
    const expanded = presetAuthSpec(spec, pinning);
    const method = parseHeaderSpec(expanded, expanded.slice('header:'.length));
    return { ...method, preset: spec, pinning, spec };
  }
  if (spec.startsWith('mtls:uri:')) {
    return { kind: 'mtls', match: 'uri', pattern: compile(spec.slice('mtls:uri:'.length), spec), spec };
  }
  if (spec.startsWith('mtls:subject:')) {
    return {
      kind: 'mtls',
      match: 'subject',
      pattern: compile(spec.slice('mtls:subject:'.length), spec),
      spec,
    };
  }
  if (spec.startsWith('mtls:')) {
    return { kind: 'mtls', match: 'subject', pattern: compile(spec.slice('mtls:'.length), spec), spec };
  }
  if (spec.startsWith('header:')) return parseHeaderSpec(spec, spec.slice('header:'.length));
  if (spec === 'userpass' || spec.startsWith('userpass:')) {
    throw new AuthMethodError(
      AuthMethodErrorCode.UNSUPPORTED,
      `auth method ${JSON.stringify(spec.split(':')[0])} (argocd-agent's deprecated username/password file) is not supported: issue each agent a certificate with \`pullplane agent create\` and use mtls (or mtls:subject:<regex>), use token (bearer tokens signed by --token-key-path), or behind a mesh istio, linkerd or header:<name>:<regex>`,
    );
  }
  throw new AuthMethodError(
    AuthMethodErrorCode.UNKNOWN,
    `unknown auth method ${JSON.stringify(spec)}: expected mtls, mtls:subject:<regex>, mtls:uri:<regex>, header:<name>:<regex>, istio, linkerd or token`,
  );
}

/** A caller-facing listener's `--auth`, `--mesh-trust-domain` and `--mesh-caller-namespaces`. */
export interface CallerAuthFlags {
  auth: string;
  meshTrustDomain?: string | undefined;
  meshCallerNamespaces: readonly string[];
}

/** `--auth` with the mesh presets pinned to the callers' trust domain and namespaces. */
export function parseCallerAuthMethod(f: CallerAuthFlags): AuthMethod {
  const mesh =
    f.meshTrustDomain && f.meshCallerNamespaces.length > 0
      ? { trustDomain: f.meshTrustDomain, namespaces: [...f.meshCallerNamespaces] }
      : undefined;
  return parseAuthMethod(f.auth, { mesh });
}

function parseHeaderSpec(spec: string, rest: string): HeaderAuthMethod {
  const colon = rest.indexOf(':');
  if (colon === -1) {
    throw new AuthMethodError(
      AuthMethodErrorCode.INVALID_REGEX,
      `auth method ${JSON.stringify(spec)} has no regex: expected header:<name>:<regex>`,
    );
  }
  const name = rest.slice(0, colon);
  if (!TOKEN.test(name)) {
    throw new AuthMethodError(
      AuthMethodErrorCode.INVALID_HEADER_NAME,
      `auth method ${JSON.stringify(spec)}: ${JSON.stringify(name)} is not a valid header name`,
    );
  }
  return { kind: 'header', header: name.toLowerCase(), pattern: compile(rest.slice(colon + 1), spec), spec };
}

function compile(source: string, spec: string): RegExp {
  if (source === '') {
    throw new AuthMethodError(
      AuthMethodErrorCode.INVALID_REGEX,
      `auth method ${JSON.stringify(spec)} has an empty regex`,
    );
  }
  let pattern: RegExp;
  try {
    pattern = new RegExp(source);
  } catch (cause) {
    throw new AuthMethodError(
      AuthMethodErrorCode.INVALID_REGEX,
      `auth method ${JSON.stringify(spec)}: invalid regex: ${(cause as Error).message}`,
      { cause },
    );
  }
  // An alternation with the empty pattern always matches, exposing the group count.
  const groups = (new RegExp(`${source}|`).exec('')?.length ?? 1) - 1;
  if (groups < 1) {
    throw new AuthMethodError(
      AuthMethodErrorCode.NO_CAPTURE_GROUP,
      `auth method ${JSON.stringify(spec)}: the regex needs a capture group for the agent name`,
    );
  }
  return pattern;
}
