import { defineErrors } from '@pullplane/errors';
import { type Answer, type Failure, type FailureNames, statusAnswer } from '@pullplane/http-front';

/**
 * Every answer the extension proxy gives itself: a stable code, an HTTP status, and a
 * Kubernetes-like Status body, so Argo CD's UI and operators see the same shape whatever hop
 * refused.
 */
export const ExtensionProxyErrors = defineErrors('@pullplane/extension-proxy', {
  NO_CREDENTIALS: {
    code: 'EXTENSION_PROXY_NO_CREDENTIALS',
    status: 401,
    message: 'no credentials: only the Argo CD server may call the extension proxy',
  },
  BAD_CREDENTIALS: {
    code: 'EXTENSION_PROXY_BAD_CREDENTIALS',
    status: 401,
    message: 'credentials not accepted',
  },
  NOT_ALLOWED: {
    code: 'EXTENSION_PROXY_NOT_ALLOWED',
    status: 403,
    message: 'caller is not an allowed Argo CD server',
  },
  REVOKED: {
    code: 'EXTENSION_PROXY_REVOKED',
    status: 403,
    message: 'the agent has been revoked',
  },
  BAD_PATH: {
    code: 'EXTENSION_PROXY_BAD_PATH',
    status: 400,
    message: 'malformed request path',
  },
  BAD_EXTENSION: {
    code: 'EXTENSION_PROXY_BAD_EXTENSION',
    status: 400,
    message: 'the path must start with /<extension>/ (names match ^[A-Za-z0-9-_]+$)',
  },
  NO_TARGET: {
    code: 'EXTENSION_PROXY_NO_TARGET',
    status: 400,
    message: 'no target cluster: Argocd-Target-Cluster-Name or Argocd-Target-Cluster-URL is required',
  },
  BAD_TARGET: {
    code: 'EXTENSION_PROXY_BAD_TARGET',
    status: 400,
    message: 'the target cluster is not an agent',
  },
  TARGET_MISMATCH: {
    code: 'EXTENSION_PROXY_TARGET_MISMATCH',
    status: 400,
    message: 'Argocd-Target-Cluster-Name and Argocd-Target-Cluster-URL name different agents',
  },
  BAD_HEADER: {
    code: 'EXTENSION_PROXY_BAD_HEADER',
    status: 400,
    message: 'malformed Argo CD header',
  },
  METHOD_NOT_ALLOWED: {
    code: 'EXTENSION_PROXY_METHOD_NOT_ALLOWED',
    status: 405,
    message: 'method not allowed: proxy extensions take GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS',
  },
  UNSUPPORTED_UPGRADE: {
    code: 'EXTENSION_PROXY_UNSUPPORTED_UPGRADE',
    status: 400,
    message: 'only WebSocket upgrades are forwarded',
  },
  TOO_LARGE: {
    code: 'EXTENSION_PROXY_TOO_LARGE',
    status: 413,
    message: 'request body exceeds the limit',
  },
  NOT_SERVED: {
    code: 'EXTENSION_PROXY_NOT_SERVED',
    status: 404,
    message: 'the agent serves no such extension',
  },
  NOT_CONNECTED: {
    code: 'EXTENSION_PROXY_NOT_CONNECTED',
    status: 502,
    message: 'Agent is not connected',
  },
  TUNNEL_LOST: {
    code: 'EXTENSION_PROXY_TUNNEL_LOST',
    status: 502,
    message: 'the tunnel to the agent was lost',
  },
  TIMEOUT: {
    code: 'EXTENSION_PROXY_TIMEOUT',
    status: 504,
    message: 'the agent did not answer in time',
  },
  INTERNAL: {
    code: 'EXTENSION_PROXY_INTERNAL',
    status: 500,
    message: 'the extension request failed',
  },
});

/** The methods Argo CD's API server forwards to a proxy extension; any other is refused. */
export const EXTENSION_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
]);

export type ExtensionProxyErrorName = keyof typeof ExtensionProxyErrors.specs;

export type ExtensionProxyFailure = Failure<ExtensionProxyErrorName>;

/** The extension proxy's names for what the front finds wrong: its one boundary with tunnel failures. */
export const EXTENSION_PROXY_FAILURES: FailureNames<ExtensionProxyErrorName> = {
  NOT_CONNECTED: 'NOT_CONNECTED',
  // An agent without extensions (or one that predates them) refuses the stream.
  REFUSED: 'NOT_SERVED',
  TIMEOUT: 'TIMEOUT',
  TUNNEL_LOST: 'TUNNEL_LOST',
  FAILED: 'INTERNAL',
  TOO_LARGE: 'TOO_LARGE',
  TOKEN_REVOKED: 'BAD_CREDENTIALS',
  AGENT_REVOKED: 'REVOKED',
};

const ALLOW = { allow: [...EXTENSION_METHODS].join(', ') };

/** The answer for a failure: its Status, with `Allow` on a 405. */
export function extensionProxyAnswer(f: ExtensionProxyFailure): Answer {
  const spec = ExtensionProxyErrors.specs[f.name];
  return statusAnswer(spec, f.detail, spec.status === 405 ? ALLOW : {});
}
