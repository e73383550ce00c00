import { defineErrors } from '@pullplane/errors';
import { type TunnelError, TunnelErrorCode } from '@pullplane/tunnel';

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

/** The Status `reason` Kubernetes gives each HTTP status we answer with. */
const STATUS_REASON: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  500: 'InternalError',
  502: 'BadGateway',
  504: 'Timeout',
};

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

export interface ExtensionProxyFailure {
  name: ExtensionProxyErrorName;
  detail?: string;
}

/** The one boundary where tunnel failures become HTTP answers. */
export function fromTunnelError(err: TunnelError): ExtensionProxyFailure {
  switch (err.code) {
    case TunnelErrorCode.NOT_FOUND:
      return { name: 'NOT_CONNECTED', detail: err.message };
    // An agent without extensions (or one that predates them) refuses the stream.
    case TunnelErrorCode.REFUSED:
      return { name: 'NOT_SERVED', detail: err.message };
    case TunnelErrorCode.DEADLINE_EXCEEDED:
      return { name: 'TIMEOUT', detail: err.message };
    case TunnelErrorCode.UNAVAILABLE:
    case TunnelErrorCode.GOING_AWAY:
      return { name: 'TUNNEL_LOST', detail: err.message };
    default:
      return { name: 'INTERNAL', detail: err.message };
  }
}

/** The answer for a failure: status, headers (with `Allow` on a 405) and a Status body. */
export function failureBody(f: ExtensionProxyFailure): {
  code: number;
  body: string;
  headers: Record<string, string>;
} {
  const e = ExtensionProxyErrors.specs[f.name];
  const message =
    f.detail && !f.detail.startsWith(e.message) ? `${e.message}: ${f.detail}` : (f.detail ?? e.message);
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: STATUS_REASON[e.status] ?? 'InternalError',
    details: { causes: [{ reason: e.code }] },
    code: e.status,
  });
  return {
    code: e.status,
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      ...(e.status === 405 ? { allow: [...EXTENSION_METHODS].join(', ') } : {}),
    },
  };
}
