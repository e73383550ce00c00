import { ManagedFilterError, ManagedFilterErrorCode } from './errors.js';

export type KubeVerb =
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection';

export interface ParsedKubePath {
  kind: 'discovery' | 'resource';
  verb: KubeVerb;
  /** '' for the core group (and for discovery roots). */
  group: string;
  /** '' for /version, /api, /apis, /apis/<g> and /openapi/**. */
  version: string;
  /** Plural resource; '' for discovery. */
  resource: string;
  namespace?: string;
  /** Percent-decoded object name. */
  name?: string;
  subresource?: string;
  /** The validated path exactly as received (no query), safe to forward upstream. */
  path: string;
  /** The query string as received, without '?'. */
  rawQuery: string;
  query: URLSearchParams;
}

/** Where one object lives, enough to GET it. */
export interface TargetRef {
  group: string;
  version: string;
  resource: string;
  namespace?: string;
  name: string;
  /** The GET path of the object itself (subresource dropped). */
  path: string;
}

// Requests longer than this are not something kubectl or Argo CD ever send.
const MAX_PATH_WITH_QUERY = 8192;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VERSION = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
// RFC 3986 pchar minus '%': what may appear raw (or percent-decoded) in a name segment.
const NAME_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]+$/;
const MAX_NAME = 253;
// Bytes that must never be smuggled in encoded form: '/', '.', '\', '%' (double encoding) and controls.
const FORBIDDEN_DECODED = new Set(['/', '.', '\\', '%']);
// The API server treats these as subresources of a Namespace, not as resources inside it.
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

function invalid(message: string): never {
  throw new ManagedFilterError(ManagedFilterErrorCode.INVALID_PATH, message);
}

function unsupported(message: string): never {
  throw new ManagedFilterError(ManagedFilterErrorCode.UNSUPPORTED_PATH, message);
}

function decodeSegment(seg: string): string {
  if (seg === '.' || seg === '..') invalid(`dot segment in path`);
  if (!seg.includes('%')) {
    if (!NAME_CHARS.test(seg)) invalid(`illegal character in path segment`);
    return seg;
  }
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    const hex = seg.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) invalid('malformed percent-encoding in path');
    const code = Number.parseInt(hex, 16);
    const ch = String.fromCharCode(code);
    if (code < 0x21 || code > 0x7e || FORBIDDEN_DECODED.has(ch))
      invalid(`encoded %${hex} is not allowed in a path`);
    out += ch;
    i += 2;
  }
  if (out === '.' || out === '..' || !NAME_CHARS.test(out)) invalid('illegal encoded path segment');
  return out;
}

function verbOf(method: string, named: boolean, query: URLSearchParams): KubeVerb {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (named) return 'get';
      return parseWatchParam(query.get('watch')) ? 'watch' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      throw new ManagedFilterError(
        ManagedFilterErrorCode.METHOD_NOT_ALLOWED,
        `method ${method} is not allowed`,
      );
  }
}

/** Mirrors Go's strconv.ParseBool, which the API server uses for ?watch=. */
function parseWatchParam(value: string | null): boolean {
  if (value === null || value === '') return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new ManagedFilterError(ManagedFilterErrorCode.INVALID_QUERY, `invalid value for watch: ${value}`);
}

/**
 * Parses a Kubernetes API request the way the API server's RequestInfoFactory does, so the
 * filter and the cluster agree on which object a request touches. Anything ambiguous
 * (dot segments, empty segments, encoded '/' or '.', controls, non-ASCII) is refused
 * rather than normalised: a normalising parser is where path-confusion bugs live.
 */
export function parseKubePath(method: string, pathWithQuery: string): ParsedKubePath {
  if (typeof pathWithQuery !== 'string' || pathWithQuery.length === 0) invalid('empty path');
  if (pathWithQuery.length > MAX_PATH_WITH_QUERY) invalid('path too long');
  // Only visible ASCII may appear in a request target; this also rules out NUL, CR/LF and spaces.
  if (!/^[\x21-\x7e]+$/.test(pathWithQuery)) invalid('path contains control, space or non-ASCII characters');
  if (pathWithQuery.includes('#') || pathWithQuery.includes('\\')) invalid('path contains # or \\');
  const q = pathWithQuery.indexOf('?');
  const path = q < 0 ? pathWithQuery : pathWithQuery.slice(0, q);
  const rawQuery = q < 0 ? '' : pathWithQuery.slice(q + 1);
  if (!path.startsWith('/') || path.startsWith('//')) invalid('path must be absolute');
  if (path === '/') unsupported('the root path is not exposed');
  const raw = path.slice(1).split('/');
  if (raw.some((s) => s.length === 0)) invalid('empty path segment');
  const parts = raw.map(decodeSegment);
  const query = new URLSearchParams(rawQuery);
  const upper = method.toUpperCase();
  const discovery = (group = '', version = ''): ParsedKubePath => ({
    kind: 'discovery',
    verb: verbOf(upper, true, query),
    group,
    version,
    resource: '',
    path,
    rawQuery,
    query,
  });

  const [root, a, b] = parts;
  if (root === 'version' && parts.length === 1) return discovery();
  if (root === 'openapi' && parts.length >= 2) {
    if (a !== 'v2' && a !== 'v3') unsupported('unknown openapi version');
    return discovery();
  }
  if (root === 'api') {
    if (parts.length === 1) return discovery();
    if (!VERSION.test(a!)) invalid('invalid API version');
    if (parts.length === 2) return discovery('', a!);
    return parseResource(upper, '', a!, parts.slice(2), path, rawQuery, query);
  }
  if (root === 'apis') {
    if (parts.length === 1) return discovery();
    if (a!.length > 253 || !DNS_SUBDOMAIN.test(a!)) invalid('invalid API group');
    if (parts.length === 2) return discovery(a!);
    if (!VERSION.test(b!)) invalid('invalid API version');
    if (parts.length === 3) return discovery(a!, b!);
    return parseResource(upper, a!, b!, parts.slice(3), path, rawQuery, query);
  }
  unsupported(`path /${root} is not exposed`);
}

function parseResource(
  method: string,
  group: string,
  version: string,
  input: string[],
  path: string,
  rawQuery: string,
  query: URLSearchParams,
): ParsedKubePath {
  let rest = input;
  let legacyWatch = false;
  if (rest[0] === 'proxy') unsupported('the proxy verb is not exposed');
  if (rest[0] === 'watch') {
    if (method !== 'GET' && method !== 'HEAD') {
      throw new ManagedFilterError(
        ManagedFilterErrorCode.METHOD_NOT_ALLOWED,
        'legacy watch paths only accept GET',
      );
    }
    legacyWatch = true;
    rest = rest.slice(1);
    if (rest.length === 0) invalid('watch path without a resource');
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length > 1) {
    const ns = rest[1]!;
    if (ns.length > 63 || !DNS_LABEL.test(ns)) invalid('invalid namespace');
    // /namespaces/<ns>/<resource>/... addresses something inside the namespace;
    // /namespaces/<ns>[/status|/finalize] addresses the Namespace object itself.
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) {
      namespace = ns;
      rest = rest.slice(2);
    }
  }
  if (rest.length > 3) unsupported('paths below a subresource are not exposed');
  const [resource, name, subresource] = rest as [string, string | undefined, string | undefined];
  if (!DNS_LABEL.test(resource) || resource.length > 63) invalid('invalid resource');
  if (name !== undefined && name.length > MAX_NAME) invalid('name too long');
  if (subresource !== undefined && !DNS_LABEL.test(subresource)) invalid('invalid subresource');
  const verb: KubeVerb = legacyWatch ? 'watch' : verbOf(method, name !== undefined, query);
  const out: ParsedKubePath = { kind: 'resource', verb, group, version, resource, path, rawQuery, query };
  if (namespace !== undefined) out.namespace = namespace;
  if (name !== undefined) out.name = name;
  if (subresource !== undefined) out.subresource = subresource;
  return out;
}

function encodeName(name: string): string {
  return encodeURIComponent(name).replace(/%3A/g, ':').replace(/%40/g, '@');
}

/** The object a named request touches (its parent, for subresources), or undefined for collections. */
export function targetOf(parsed: ParsedKubePath): TargetRef | undefined {
  if (parsed.kind !== 'resource' || parsed.name === undefined) return undefined;
  const prefix = parsed.group === '' ? `/api/${parsed.version}` : `/apis/${parsed.group}/${parsed.version}`;
  const ns = parsed.namespace === undefined ? '' : `/namespaces/${parsed.namespace}`;
  const out: TargetRef = {
    group: parsed.group,
    version: parsed.version,
    resource: parsed.resource,
    name: parsed.name,
    path: `${prefix}${ns}/${parsed.resource}/${encodeName(parsed.name)}`,
  };
  if (parsed.namespace !== undefined) out.namespace = parsed.namespace;
  return out;
}
