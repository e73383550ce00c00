import { isManagedFilterError } from './errors.js';

/** The Status reasons this library produces (a subset of metav1.StatusReason). */
export type StatusReason =
  | 'BadRequest'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable';

export interface StatusDetails {
  name?: string;
  group?: string;
  /** Kubernetes puts the resource (plural) here for NotFound, not the Kind. */
  kind?: string;
  uid?: string;
  causes?: Array<{ reason?: string; message?: string; field?: string }>;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/** The message the seed's troubleshooting table documents for a hidden object. */
export const NOT_MANAGED_MESSAGE = 'resource not managed by app';

/** A metav1.Status failure body, shaped exactly as the API server sends one. */
export function statusObject(
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
): KubeStatus {
  const out: KubeStatus = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
  // The API server omits empty details; mirror that so clients see familiar bodies.
  if (details && Object.keys(details).length > 0) out.details = details;
  return out;
}

/** Maps any error thrown by this library (or an unexpected one) to a Status body. */
export function statusFromError(err: unknown): KubeStatus {
  if (isManagedFilterError(err)) return statusObject(err.httpStatus, err.reason, err.message);
  return statusObject(500, 'InternalError', err instanceof Error ? err.message : String(err));
}
