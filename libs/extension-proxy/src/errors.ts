import { type TunnelError, TunnelErrorCode } from '@pullplane/tunnel';

/**
 * Every answer the extension proxy gives itself: a stable name, an HTTP status, and a
 * Kubernetes-like Status body, so Argo CD's UI and operators see the same shape whatever hop
 * refused.
 */
export const ExtensionProxyError = {
  NO_CREDENTIALS: {
    code: 401,
    reason: 'Unauthorized',
    message: 'no credentials: only the Argo CD server may call the extension proxy',
  },
  BAD_CREDENTIALS: { code: 401, reason: 'Unauthorized', message: 'credentials not accepted' },
  NOT_ALLOWED: { code: 403, reason: 'Forbidden', message: 'caller is not an allowed Argo CD server' },
  REVOKED: { code: 403, reason: 'Forbidden', message: 'the agent has been revoked' },
  BAD_PATH: { code: 400, reason: 'BadRequest', message: 'malformed request path' },
  BAD_EXTENSION: {
    code: 400,
    reason: 'BadRequest',
    message: 'the path must start with /<extension>/ (names match ^[A-Za-z0-9-_]+$)',
  },
  NO_TARGET: {
    code: 400,
    reason: 'BadRequest',
    message: 'no target cluster: Argocd-Target-Cluster-Name or Argocd-Target-Cluster-URL is required',
  },
  BAD_TARGET: { code: 400, reason: 'BadRequest', message: 'the target cluster is not an agent' },
  TARGET_MISMATCH: {
    code: 400,
    reason: 'BadRequest',
    message: 'Argocd-Target-Cluster-Name and Argocd-Target-Cluster-URL name different agents',
  },
  BAD_HEADER: { code: 400, reason: 'BadRequest', message: 'malformed Argo CD header' },
  TOO_LARGE: { code: 413, reason: 'RequestEntityTooLarge', message: 'request body exceeds the limit' },
  NOT_SERVED: { code: 404, reason: 'NotFound', message: 'the agent serves no such extension' },
  NOT_CONNECTED: { code: 502, reason: 'BadGateway', message: 'Agent is not connected' },
  TUNNEL_LOST: { code: 502, reason: 'BadGateway', message: 'the tunnel to the agent was lost' },
  TIMEOUT: { code: 504, reason: 'Timeout', message: 'the agent did not answer in time' },
  INTERNAL: { code: 500, reason: 'InternalError', message: 'the extension request failed' },
} as const;
export type ExtensionProxyErrorName = keyof typeof ExtensionProxyError;

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

export function failureBody(f: ExtensionProxyFailure): { code: number; body: string } {
  const e = ExtensionProxyError[f.name];
  const message =
    f.detail && !f.detail.startsWith(e.message) ? `${e.message}: ${f.detail}` : (f.detail ?? e.message);
  return {
    code: e.code,
    body: JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason: e.reason,
      code: e.code,
    }),
  };
}
