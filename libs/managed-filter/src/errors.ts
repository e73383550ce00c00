/** Stable codes for every way the managed filter refuses a request or gives up on a response. */
export const ManagedFilterErrorCode = {
  /** The request path is malformed or tries a traversal trick. */
  INVALID_PATH: 'MANAGED_FILTER_INVALID_PATH',
  /** A query parameter the filter depends on (watch) has a value the API server would reject. */
  INVALID_QUERY: 'MANAGED_FILTER_INVALID_QUERY',
  /** A well-formed path that the filter does not expose (/metrics, /logs, proxy verbs, ...). */
  UNSUPPORTED_PATH: 'MANAGED_FILTER_UNSUPPORTED_PATH',
  /** An HTTP method the Kubernetes API has no verb for. */
  METHOD_NOT_ALLOWED: 'MANAGED_FILTER_METHOD_NOT_ALLOWED',
  /** The upstream body is not the JSON shape the chosen filter expects. */
  MALFORMED_RESPONSE: 'MANAGED_FILTER_MALFORMED_RESPONSE',
  /** One list item or watch event exceeds the per-item memory bound. */
  ITEM_TOO_LARGE: 'MANAGED_FILTER_ITEM_TOO_LARGE',
} as const;
export type ManagedFilterErrorCode = (typeof ManagedFilterErrorCode)[keyof typeof ManagedFilterErrorCode];

/** HTTP status and Kubernetes Status reason each code maps to when answered to a client. */
const httpOf: Record<ManagedFilterErrorCode, { status: number; reason: string }> = {
  [ManagedFilterErrorCode.INVALID_PATH]: { status: 400, reason: 'BadRequest' },
  [ManagedFilterErrorCode.INVALID_QUERY]: { status: 400, reason: 'BadRequest' },
  [ManagedFilterErrorCode.UNSUPPORTED_PATH]: { status: 403, reason: 'Forbidden' },
  [ManagedFilterErrorCode.METHOD_NOT_ALLOWED]: { status: 405, reason: 'MethodNotAllowed' },
  // Upstream problems surface as a bad gateway: the client did nothing wrong.
  [ManagedFilterErrorCode.MALFORMED_RESPONSE]: { status: 502, reason: 'InternalError' },
  [ManagedFilterErrorCode.ITEM_TOO_LARGE]: { status: 502, reason: 'InternalError' },
};

export class ManagedFilterError extends Error {
  override readonly name = 'ManagedFilterError';
  constructor(
    readonly code: ManagedFilterErrorCode,
    message: string,
  ) {
    super(message);
  }

  get httpStatus(): number {
    return httpOf[this.code].status;
  }

  get reason(): string {
    return httpOf[this.code].reason;
  }
}

export function isManagedFilterError(err: unknown): err is ManagedFilterError {
  return err instanceof ManagedFilterError;
}
