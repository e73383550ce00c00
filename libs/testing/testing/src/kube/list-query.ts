import type { ObjectStore } from './object-store.js';
import type { ResourceType } from './resource-registry.js';
import { type FieldSelector, type LabelSelector, matchesFields, matchesLabels } from './selectors.js';
import { errors, StatusError } from './status.js';
import type { KubeObject } from './types.js';

export interface ListQuery {
  namespace?: string | undefined;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  limit?: number | undefined;
  continueToken?: string | undefined;
  resourceVersion?: string | undefined;
  resourceVersionMatch?: string | undefined;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continueToken?: string | undefined;
  remainingItemCount?: number | undefined;
}

interface ContinueState {
  v: string;
  rv: number;
  start: string;
}

const sortKey = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

export function encodeContinue(rv: number, lastKey: string): string {
  const state: ContinueState = { v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` };
  return Buffer.from(JSON.stringify(state)).toString('base64url');
}

function decodeContinue(token: string): ContinueState {
  try {
    const state = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as ContinueState;
    if (state.v !== 'meta.k8s.io/v1' || typeof state.rv !== 'number' || typeof state.start !== 'string')
      throw new Error();
    return state;
  } catch {
    throw errors.badRequest(
      'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
  }
}

export function matchesQuery(
  obj: KubeObject,
  q: Pick<ListQuery, 'labelSelector' | 'fieldSelector'>,
): boolean {
  return matchesLabels(q.labelSelector, obj.metadata.labels) && matchesFields(q.fieldSelector, obj);
}

/**
 * List with the API server's resourceVersion semantics: unset/"0" = now; a number means
 * "not older than" (or exactly that version with resourceVersionMatch=Exact, served by
 * rewinding history); continue tokens pin later pages to the first page's version.
 */
export function listObjects(store: ObjectStore, type: ResourceType, q: ListQuery): ListResult {
  let atRv = store.currentRv();
  let after: string | undefined;
  let items: KubeObject[] | undefined;
  if (q.continueToken) {
    const state = decodeContinue(q.continueToken);
    atRv = state.rv;
    after = state.start;
    items = store.listAt(type, atRv, q.namespace);
    if (!items) {
      throw new StatusError(
        410,
        'Expired',
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
      );
    }
  } else if (q.resourceVersion && q.resourceVersion !== '0') {
    const rv = Number(q.resourceVersion);
    if (!Number.isInteger(rv)) throw errors.badRequest(`invalid resource version: ${q.resourceVersion}`);
    if (rv > store.currentRv()) {
      throw new StatusError(
        504,
        'Timeout',
        `Too large resource version: ${rv}, current: ${store.currentRv()}`,
        {
          causes: [{ type: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
          retryAfterSeconds: 1,
        },
      );
    }
    if (q.resourceVersionMatch === 'Exact') {
      items = store.listAt(type, rv, q.namespace);
      if (!items) throw errors.gone(`too old resource version: ${rv} (${store.oldestRv()})`);
      atRv = rv;
    }
  } else if (q.resourceVersionMatch === 'Exact') {
    throw errors.badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion ""');
  }
  items ??= store.list(type, q.namespace);
  let matching = items.filter((o) => matchesQuery(o, q));
  if (after !== undefined) {
    const start = after;
    matching = matching.filter((o) => sortKey(o) >= start);
  }
  const limit = q.limit && q.limit > 0 ? q.limit : undefined;
  if (limit === undefined || matching.length <= limit) {
    return { items: matching, resourceVersion: String(atRv) };
  }
  const page = matching.slice(0, limit);
  const last = page[page.length - 1]!;
  return {
    items: page,
    resourceVersion: String(atRv),
    continueToken: encodeContinue(atRv, sortKey(last)),
    remainingItemCount: matching.length - limit,
  };
}
