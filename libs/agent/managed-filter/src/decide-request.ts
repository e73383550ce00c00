import { managedVerdict, type VerdictOf } from './collection-filter.js';
import { eventVerdict, isEventResource } from './event-visibility.js';
import { type ParsedKubePath, type TargetRef, targetOf } from './kube-path.js';
import type { ManagedCheck } from './managed-resolver.js';
import { NOT_MANAGED_MESSAGE, type StatusDetails } from './status.js';

export type FilterKind = 'list' | 'table' | 'watch' | 'events' | 'none';

export interface ForwardDecision {
  action: 'forward';
  /** Which response filter the agent must apply ('none': pass the body through). */
  filter: FilterKind;
  /** The response is a newline-delimited watch stream rather than one JSON document. */
  watch: boolean;
  /** Path and query to send upstream; the query may have been adjusted so rows can be judged. */
  path: string;
}

export interface RejectDecision {
  action: 'reject';
  status: 400 | 403 | 404;
  reason: 'BadRequest' | 'Forbidden' | 'NotFound';
  message: string;
  details?: StatusDetails;
}

export type RequestDecision = ForwardDecision | RejectDecision;

export interface DecideOptions {
  resolver: ManagedCheck;
  /** GETs the object at target.path fresh from the cluster; resolves undefined on 404. */
  getTarget: (target: TargetRef) => Promise<unknown>;
  /** The parsed JSON request body, for create (and for PUT / apply-patch that may create). */
  bodyObject?: unknown;
  /** Request Content-Type; `application/apply-patch+yaml` marks a server-side apply, which can create. */
  contentType?: string;
  /** Request Accept header, used to spot `as=Table`. */
  accept?: string;
  /** false switches the rule off entirely (everything forwarded unfiltered). Default true. */
  enabled?: boolean;
}

/** Subresources that only read or act on their parent; exec/attach/portforward/proxy/token are not exposed. */
export const ALLOWED_SUBRESOURCES: ReadonlySet<string> = new Set([
  'status',
  'log',
  'scale',
  'eviction',
  'finalize',
]);

function fullPath(parsed: ParsedKubePath, query = parsed.rawQuery): string {
  return query === '' ? parsed.path : `${parsed.path}?${query}`;
}

function forward(parsed: ParsedKubePath, filter: FilterKind, query?: string): ForwardDecision {
  return { action: 'forward', filter, watch: parsed.verb === 'watch', path: fullPath(parsed, query) };
}

function reject(
  status: RejectDecision['status'],
  reason: RejectDecision['reason'],
  message: string,
  details?: StatusDetails,
): RejectDecision {
  const out: RejectDecision = { action: 'reject', status, reason, message };
  if (details) out.details = details;
  return out;
}

function notManaged(parsed: ParsedKubePath, status: 403 | 404 = 404): RejectDecision {
  const details: StatusDetails = { kind: parsed.resource };
  if (parsed.name !== undefined) details.name = parsed.name;
  if (parsed.group !== '') details.group = parsed.group;
  return reject(status, status === 404 ? 'NotFound' : 'Forbidden', NOT_MANAGED_MESSAGE, details);
}

/**
 * Table rows can only be judged by their embedded object: ask for metadata when the client
 * asked for none, and for whole Events (the subject lives outside metadata).
 */
function tableQuery(
  parsed: ParsedKubePath,
  isEvent: boolean,
  accept: string | undefined,
): string | undefined {
  if (!/;\s*as=Table/i.test(accept ?? '')) return undefined;
  const query = new URLSearchParams(parsed.rawQuery);
  const current = query.get('includeObject');
  const wanted = isEvent ? 'Object' : current === 'None' ? 'Metadata' : undefined;
  if (wanted === undefined || current === wanted) return undefined;
  query.set('includeObject', wanted);
  return query.toString();
}

/**
 * Applies the visibility rule to one request before it reaches the cluster:
 * discovery passes; lists and watches pass with a response filter; named reads and writes
 * pass only when the target (the parent, for subresources) is managed; creates only when the
 * submitted object carries tracking; deletecollection is refused.
 */
export async function decideRequest(parsed: ParsedKubePath, opts: DecideOptions): Promise<RequestDecision> {
  if (opts.enabled === false) return forward(parsed, 'none');
  if (parsed.kind === 'discovery') {
    return parsed.verb === 'get'
      ? forward(parsed, 'none')
      : reject(403, 'Forbidden', 'discovery endpoints are read-only');
  }
  if (parsed.subresource !== undefined && !ALLOWED_SUBRESOURCES.has(parsed.subresource)) {
    return reject(403, 'Forbidden', `subresource ${parsed.subresource} is not exposed`);
  }
  const isEvent = isEventResource(parsed.group, parsed.resource);
  const verdictOf: VerdictOf = isEvent ? eventVerdict : managedVerdict;
  const check = opts.resolver;

  const checkCreate = (): RequestDecision => {
    const body = opts.bodyObject;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return reject(400, 'BadRequest', 'a JSON object body is required to check Argo CD tracking');
    }
    return check.isTracked(body) ? forward(parsed, 'none') : notManaged(parsed, 403);
  };

  const gate = async (onMissing: () => RequestDecision): Promise<RequestDecision> => {
    const target = targetOf(parsed)!;
    const obj = await opts.getTarget(target);
    if (obj === undefined || obj === null) return onMissing();
    return (await verdictOf(obj, check)) === 'managed' ? forward(parsed, 'none') : notManaged(parsed);
  };
  // A missing target is the cluster's own 404 to give.
  const passThrough = (): RequestDecision => forward(parsed, 'none');

  switch (parsed.verb) {
    case 'list': {
      const table = /;\s*as=Table/i.test(opts.accept ?? '');
      return forward(
        parsed,
        isEvent ? 'events' : table ? 'table' : 'list',
        tableQuery(parsed, isEvent, opts.accept),
      );
    }
    case 'watch':
      return forward(parsed, isEvent ? 'events' : 'watch', tableQuery(parsed, isEvent, opts.accept));
    case 'deletecollection':
      return reject(403, 'Forbidden', 'deletecollection is not allowed: it would reach unmanaged objects');
    case 'create':
      // POST to a named path is a subresource action (eviction): it follows its parent.
      return parsed.name === undefined ? checkCreate() : gate(passThrough);
    case 'get':
    case 'delete':
      return gate(passThrough);
    case 'update':
      // PUT creates when the object is missing (for kinds that allow create-on-update).
      return gate(parsed.subresource === undefined ? checkCreate : passThrough);
    case 'patch': {
      // Server-side apply creates a missing object.
      const apply = /application\/apply-patch/i.test(opts.contentType ?? '');
      return gate(apply && parsed.subresource === undefined ? checkCreate : passThrough);
    }
  }
}
