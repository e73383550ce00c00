import { statusObject } from '@pullplane/managed-filter';

/**
 * Every answer the agent's extension executor gives itself, as a Kubernetes-like Status body,
 * with a stable reason per failure.
 */
export const ExtensionError = {
  UNKNOWN_EXTENSION: { code: 404, reason: 'NotFound', message: 'extension not served by this agent' },
  BAD_NAME: { code: 400, reason: 'BadRequest', message: 'extension names match ^[A-Za-z0-9-_]+$' },
  BAD_PATH: { code: 400, reason: 'BadRequest', message: 'malformed request path' },
  MISCONFIGURED: {
    code: 503,
    reason: 'ServiceUnavailable',
    message: 'extension misconfigured on the agent',
  },
  BACKEND_UNREACHABLE: { code: 502, reason: 'BadGateway', message: 'extension backend unreachable' },
  BACKEND_TIMEOUT: {
    code: 504,
    reason: 'Timeout',
    message: 'extension backend did not accept the connection in time',
  },
} as const;
export type ExtensionErrorName = keyof typeof ExtensionError;

export function extensionStatus(name: ExtensionErrorName, detail?: string): { code: number; body: string } {
  const e = ExtensionError[name];
  return {
    code: e.code,
    body: JSON.stringify(statusObject(e.code, e.reason, detail ? `${e.message}: ${detail}` : e.message)),
  };
}
