import { defineErrors } from '@pullplane/errors';
import { type Answer, type Failure, type FailureNames, statusAnswer } from '@pullplane/http-front';

/**
 * Every answer the proxy itself gives, as a Kubernetes Status. Codes and messages follow the
 * troubleshooting table of the live-resources guide, so operators can search for them.
 */
export const ResourceProxyErrors = defineErrors('@pullplane/resource-proxy', {
  NO_CREDENTIALS: {
    code: 'RESOURCE_PROXY_NO_CREDENTIALS',
    status: 401,
    reason: 'Unauthorized',
    message: 'no credentials: present a client certificate or a bearer token',
  },
  BAD_CREDENTIALS: {
    code: 'RESOURCE_PROXY_BAD_CREDENTIALS',
    status: 401,
    reason: 'Unauthorized',
    message: 'credentials not accepted',
  },
  NOT_BOUND: {
    code: 'RESOURCE_PROXY_NOT_BOUND',
    status: 403,
    reason: 'Forbidden',
    message: 'credentials do not cover this agent',
  },
  REVOKED: {
    code: 'RESOURCE_PROXY_REVOKED',
    status: 403,
    reason: 'Forbidden',
    message: 'the agent has been revoked',
  },
  BAD_PATH: {
    code: 'RESOURCE_PROXY_BAD_PATH',
    status: 400,
    reason: 'BadRequest',
    message: 'malformed request path',
  },
  UNSUPPORTED: {
    code: 'RESOURCE_PROXY_UNSUPPORTED',
    status: 400,
    reason: 'BadRequest',
    message: 'only exec, attach and port-forward requests are upgraded, and only to WebSocket or SPDY/3.1',
  },
  TOO_LARGE: {
    code: 'RESOURCE_PROXY_TOO_LARGE',
    status: 413,
    reason: 'RequestEntityTooLarge',
    message: 'request body exceeds the limit',
  },
  NOT_CONNECTED: {
    code: 'RESOURCE_PROXY_NOT_CONNECTED',
    status: 502,
    reason: 'ServiceUnavailable',
    message: 'Agent is not connected',
  },
  TUNNEL_LOST: {
    code: 'RESOURCE_PROXY_TUNNEL_LOST',
    status: 502,
    reason: 'ServiceUnavailable',
    message: 'the tunnel to the agent was lost',
  },
  DISABLED: {
    code: 'RESOURCE_PROXY_DISABLED',
    status: 503,
    reason: 'ServiceUnavailable',
    message: 'resource proxy is disabled on the agent',
  },
  TIMEOUT: {
    code: 'RESOURCE_PROXY_TIMEOUT',
    status: 504,
    reason: 'Timeout',
    message: 'the agent did not answer in time',
  },
  CLUSTER_FAILED: {
    code: 'RESOURCE_PROXY_CLUSTER_FAILED',
    status: 500,
    reason: 'InternalError',
    message: 'the cluster API request failed',
  },
});
export const ProxyError = ResourceProxyErrors.specs;
export type ProxyErrorName = keyof typeof ProxyError;

export type ProxyFailure = Failure<ProxyErrorName>;

/** The resource proxy's names for what the front finds wrong: its one boundary with tunnel failures. */
export const RESOURCE_PROXY_FAILURES: FailureNames<ProxyErrorName> = {
  NOT_CONNECTED: 'NOT_CONNECTED',
  // An agent refuses resource streams when its resource proxy is off.
  REFUSED: 'DISABLED',
  TIMEOUT: 'TIMEOUT',
  TUNNEL_LOST: 'TUNNEL_LOST',
  FAILED: 'CLUSTER_FAILED',
  TOO_LARGE: 'TOO_LARGE',
  TOKEN_REVOKED: 'BAD_CREDENTIALS',
  AGENT_REVOKED: 'REVOKED',
};

/** The Kubernetes Status the proxy answers a failure with. */
export function resourceProxyAnswer(f: ProxyFailure): Answer {
  return statusAnswer(ProxyError[f.name], f.detail);
}
