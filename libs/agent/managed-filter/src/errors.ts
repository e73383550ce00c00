import { defineErrors, errorClass } from '@pullplane/errors';

/**
 * Every way the managed filter refuses a request or gives up on a response, with the HTTP status
 * and Kubernetes Status reason each answers with. Upstream problems surface as a bad gateway: the
 * client did nothing wrong.
 */
export const ManagedFilterErrors = defineErrors('@pullplane/managed-filter', {
  INVALID_PATH: {
    code: 'MANAGED_FILTER_INVALID_PATH',
    status: 400,
    reason: 'BadRequest',
    message: 'the request path is malformed or tries a traversal trick',
  },
  INVALID_QUERY: {
    code: 'MANAGED_FILTER_INVALID_QUERY',
    status: 400,
    reason: 'BadRequest',
    message: 'a query parameter the filter depends on (watch) has a value the API server would reject',
  },
  UNSUPPORTED_PATH: {
    code: 'MANAGED_FILTER_UNSUPPORTED_PATH',
    status: 403,
    reason: 'Forbidden',
    message: 'a well-formed path the filter does not expose (/metrics, /logs, proxy verbs…)',
  },
  METHOD_NOT_ALLOWED: {
    code: 'MANAGED_FILTER_METHOD_NOT_ALLOWED',
    status: 405,
    reason: 'MethodNotAllowed',
    message: 'an HTTP method the Kubernetes API has no verb for',
  },
  MALFORMED_RESPONSE: {
    code: 'MANAGED_FILTER_MALFORMED_RESPONSE',
    status: 502,
    reason: 'InternalError',
    message: 'the upstream body is not the JSON shape the chosen filter expects',
  },
  ITEM_TOO_LARGE: {
    code: 'MANAGED_FILTER_ITEM_TOO_LARGE',
    status: 502,
    reason: 'InternalError',
    message: 'one list item or watch event exceeds the per-item memory bound',
  },
});
export const ManagedFilterErrorCode = ManagedFilterErrors.codes;
export type ManagedFilterErrorCode = (typeof ManagedFilterErrorCode)[keyof typeof ManagedFilterErrorCode];

const reasons = new Map(Object.values(ManagedFilterErrors.specs).map((s) => [s.code as string, s.reason]));

export class ManagedFilterError extends errorClass(ManagedFilterErrors) {
  get httpStatus(): number {
    return this.statusCode;
  }

  /** The Kubernetes Status reason this code answers with. */
  get reason(): string {
    return reasons.get(this.code) ?? 'InternalError';
  }
}

export function isManagedFilterError(err: unknown): err is ManagedFilterError {
  return err instanceof ManagedFilterError;
}
