import type { IncomingHttpHeaders } from 'node:http';
import { forbidden, type RbacRules, type ResourceAttributes } from './rbac.js';

/** An answer the API server gives as plain text rather than a Status (its InternalError writer). */
export class PlainTextError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'PlainTextError';
  }
}

/** Go's %v of the v1.ObjectReference the filter builds: {Kind Namespace Name UID APIVersion ResourceVersion FieldPath}. */
function goObjectReference(attrs: ResourceAttributes): string {
  const kind = { groups: 'Group', userextras: 'UserExtra', uids: 'UID' }[attrs.resource] ?? '';
  const apiVersion = attrs.apiGroup ? `${attrs.apiGroup}/v1` : '';
  return `{${[kind, '', attrs.name ?? '', '', apiVersion, '', attrs.subresource ?? ''].join(' ')}}`;
}

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
const EXTRA_PREFIX = 'impersonate-extra-';

/** Whether the request carries any `Impersonate-*` header. */
export function hasImpersonation(headers: IncomingHttpHeaders): boolean {
  return Object.keys(headers).some((h) => h.startsWith('impersonate-'));
}

function values(headers: IncomingHttpHeaders, name: string): string[] {
  const v = headers[name];
  if (v === undefined) return [];
  // Node joins repeated headers with ", " except set-cookie; Kubernetes sends one value per header.
  return (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * The API server's impersonation filter: each requested user, service account, group, extra and uid
 * needs the `impersonate` verb for the acting user; the first one refused is a 403 naming it. Returns
 * the user the request continues as.
 */
export function impersonate(
  rbac: RbacRules,
  user: string,
  headers: IncomingHttpHeaders,
  requestUri: string,
): string {
  const target = values(headers, 'impersonate-user')[0];
  const checks: ResourceAttributes[] = [];
  if (target !== undefined) {
    if (target.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      const [namespace = '', name = ''] = target.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
      checks.push({ verb: 'impersonate', apiGroup: '', resource: 'serviceaccounts', namespace, name });
    } else checks.push({ verb: 'impersonate', apiGroup: '', resource: 'users', name: target });
  }
  for (const group of values(headers, 'impersonate-group')) {
    checks.push({ verb: 'impersonate', apiGroup: '', resource: 'groups', name: group });
  }
  for (const header of Object.keys(headers)
    .filter((h) => h.startsWith(EXTRA_PREFIX))
    .sort()) {
    const key = decodeURIComponent(header.slice(EXTRA_PREFIX.length));
    for (const value of values(headers, header)) {
      checks.push({
        verb: 'impersonate',
        apiGroup: 'authentication.k8s.io',
        resource: 'userextras',
        subresource: key,
        name: value,
      });
    }
  }
  const uid = values(headers, 'impersonate-uid')[0];
  if (uid !== undefined) {
    checks.push({ verb: 'impersonate', apiGroup: 'authentication.k8s.io', resource: 'uids', name: uid });
  }
  if (target === undefined && checks.length > 0) {
    // What buildImpersonationRequests returns, answered by responsewriters.InternalError (plain text).
    throw new PlainTextError(
      500,
      `Internal Server Error: ${JSON.stringify(requestUri)}: requested [${checks.map(goObjectReference).join(' ')}] without impersonating a user`,
    );
  }
  for (const attrs of checks) {
    if (!rbac.allows(user, attrs)) throw forbidden(user, attrs);
  }
  return target ?? user;
}
