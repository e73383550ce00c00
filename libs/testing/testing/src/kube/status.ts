/**
 * `metav1.Status` failures. Clients (kubectl, client-go, client-node, Argo CD) key
 * their behaviour on `reason` and `code`, so every error path goes through here.
 */

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'Timeout'
  | 'InternalError'
  | 'ServiceUnavailable';

export interface StatusCause {
  type?: string | undefined;
  message?: string | undefined;
  field?: string | undefined;
}

export interface StatusDetails {
  name?: string | undefined;
  group?: string | undefined;
  kind?: string | undefined;
  uid?: string | undefined;
  causes?: StatusCause[] | undefined;
  retryAfterSeconds?: number | undefined;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string | undefined;
  reason?: StatusReason | undefined;
  details?: StatusDetails | undefined;
  code: number;
}

export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'StatusError';
  }

  toStatus(): KubeStatus {
    const status: KubeStatus = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) status.details = this.details;
    return status;
  }
}

/** `pods "web" not found`, as the API server words it (`deployments.apps` for named groups). */
function qualified(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

export const errors = {
  notFound(resource: string, group: string, name: string): StatusError {
    return new StatusError(404, 'NotFound', `${qualified(resource, group)} "${name}" not found`, {
      name,
      group: group || undefined,
      kind: resource,
    });
  },
  alreadyExists(resource: string, group: string, name: string): StatusError {
    return new StatusError(409, 'AlreadyExists', `${qualified(resource, group)} "${name}" already exists`, {
      name,
      group: group || undefined,
      kind: resource,
    });
  },
  conflict(resource: string, group: string, name: string, why: string): StatusError {
    return new StatusError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualified(resource, group)} "${name}": ${why}`,
      { name, group: group || undefined, kind: resource },
    );
  },
  badRequest(message: string): StatusError {
    return new StatusError(400, 'BadRequest', message);
  },
  invalid(kind: string, group: string, name: string, causes: StatusCause[]): StatusError {
    const detail = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
    return new StatusError(422, 'Invalid', `${qualified(kind, group)} "${name}" is invalid: ${detail}`, {
      name,
      group: group || undefined,
      kind,
      causes,
    });
  },
  methodNotAllowed(): StatusError {
    return new StatusError(
      405,
      'MethodNotAllowed',
      'the server does not allow this method on the requested resource',
    );
  },
  unsupportedMediaType(contentType: string, accepted: string[]): StatusError {
    return new StatusError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
      { causes: [{ type: 'UnsupportedMediaType', message: contentType }] },
    );
  },
  gone(message: string): StatusError {
    return new StatusError(410, 'Expired', message);
  },
  notFoundPath(): StatusError {
    return new StatusError(404, 'NotFound', 'the server could not find the requested resource', {});
  },
  unauthorized(): StatusError {
    return new StatusError(401, 'Unauthorized', 'Unauthorized');
  },
  internal(message: string): StatusError {
    return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`);
  },
};
