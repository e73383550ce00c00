/** Headers that describe one HTTP hop (RFC 9110 §7.6.1, plus the proxy-* and keep-alive relics). */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Request headers that carry the caller's credentials or an identity someone downstream might
 * believe: mesh identity headers, and the front-proxy headers an API server behind an
 * authenticating proxy trusts (X-Remote-User, X-Remote-Group, X-Remote-Extra-*).
 */
export const IDENTITY_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'cookie',
  'x-remote-user',
  'x-remote-group',
  'x-forwarded-client-cert',
  'l5d-client-id',
]);
export const IDENTITY_REQUEST_HEADER_PREFIX = 'x-remote-extra-';

/**
 * W3C trace context: it crosses the tunnel in the Open frame (from an authenticated caller, or
 * the sender's span) and the agent sets it toward the cluster, so a header copy never rides along.
 */
export const TRACE_CONTEXT_HEADERS: ReadonlySet<string> = new Set(['traceparent', 'tracestate']);

/**
 * Whether a request header (lower-case name) must not be forwarded to a cluster: hop-by-hop,
 * `host` (the next hop sets its own), credentials or identity, trace context (carried in Open). The resource proxy and the agent
 * both apply it, so a cluster is never handed an identity through the tunnel even if one side
 * is misconfigured.
 */
export function isStrippedRequestHeader(name: string): boolean {
  return (
    HOP_BY_HOP_HEADERS.has(name) ||
    name === 'host' ||
    IDENTITY_REQUEST_HEADERS.has(name) ||
    TRACE_CONTEXT_HEADERS.has(name) ||
    name.startsWith(IDENTITY_REQUEST_HEADER_PREFIX)
  );
}

/** Kubernetes impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`): the cluster acts as whoever they name. */
export const IMPERSONATION_HEADER_PREFIX = 'impersonate-';

/**
 * Headers that frameworks and gateways behind a backend honour to change the method or path
 * after the request was routed and authorised (IIS/Symfony rewrites, method overrides).
 */
export const REQUEST_REWRITING_HEADERS: ReadonlySet<string> = new Set([
  'x-original-url',
  'x-rewrite-url',
  'x-original-method',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

/**
 * Whether a request header (lower-case name) must not reach an extension backend: the shared
 * rule, impersonation (an extension's service may hold an identity that can use it) and
 * request rewriting. The extension proxy and the agent both apply it.
 */
export function isStrippedExtensionRequestHeader(name: string): boolean {
  return (
    isStrippedRequestHeader(name) ||
    name.startsWith(IMPERSONATION_HEADER_PREFIX) ||
    REQUEST_REWRITING_HEADERS.has(name)
  );
}

/** Whether a response header (lower-case name) must not be passed back: hop-by-hop only. */
export function isStrippedResponseHeader(name: string): boolean {
  return HOP_BY_HOP_HEADERS.has(name);
}

/**
 * Whether a response header (lower-case name) from a backend reached through an agent (a
 * cluster's API server, an extension's service) must not be passed back: hop-by-hop, and
 * `set-cookie` (a backend's cookies mean nothing to the caller and must not land on its domain).
 */
export function isStrippedBackendResponseHeader(name: string): boolean {
  return HOP_BY_HOP_HEADERS.has(name) || name === 'set-cookie';
}
