import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseBoolParam, parseIntParam, tableVersion } from './http-io.js';
import { matchesQuery } from './list-query.js';
import type { StoreEvent } from './object-store.js';
import type { ResourceRoute } from './request-path.js';
import { apiVersionOf, typeKey } from './resource-registry.js';
import { type FieldSelector, parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { ServerContext } from './server-context.js';
import { errors } from './status.js';
import { parseIncludeObject, toTable } from './table.js';
import type { KubeObject, WatchEventType } from './types.js';

type EventType = WatchEventType | 'BOOKMARK' | 'ERROR';

/**
 * `?watch=true`: a chunked stream of newline-separated `{"type","object"}` events.
 * Resumes from `resourceVersion` using the store history (410 Expired as an ERROR event
 * when it was compacted away), converts label/field selector transitions into
 * ADDED/DELETED like the watch cache does, and cleans up when the client disconnects.
 */
export function handleWatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: ResourceRoute,
  params: URLSearchParams,
): void {
  const { type } = route;
  const labelSelector = parseLabelSelector(params.get('labelSelector'));
  const fieldSelector: FieldSelector = parseFieldSelector(params.get('fieldSelector'), type);
  if (route.name) fieldSelector.push({ field: 'metadata.name', op: '=', value: route.name });
  const query = { labelSelector, fieldSelector };
  const namespace = type.namespaced ? route.namespace : undefined;
  const timeoutSeconds =
    parseIntParam('timeoutSeconds', params.get('timeoutSeconds')) || ctx.defaultWatchTimeoutSeconds;
  const bookmarks = parseBoolParam(params.get('allowWatchBookmarks'));
  const sendInitialEvents = params.get('sendInitialEvents');
  const rvParam = params.get('resourceVersion') ?? '';
  const table = tableVersion(req.headers.accept);
  const include = parseIncludeObject(params.get('includeObject'));
  if (sendInitialEvents === 'true' && params.get('resourceVersionMatch') !== 'NotOlderThan') {
    throw errors.badRequest(
      'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    );
  }

  let replay: StoreEvent[] | undefined = [];
  const initial = rvParam === '' || rvParam === '0' || sendInitialEvents === 'true';
  if (!initial) {
    const rv = Number(rvParam);
    if (!Number.isInteger(rv)) throw errors.badRequest(`invalid resource version: ${rvParam}`);
    replay = ctx.store.eventsSince(rv);
  }

  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  res.flushHeaders();

  let columnsSent = false;
  const render = (obj: KubeObject) => {
    if (!table) return obj;
    const t = toTable(
      type,
      [obj],
      include,
      { resourceVersion: obj.metadata.resourceVersion ?? '' },
      !columnsSent,
    );
    columnsSent = true;
    return { ...t, apiVersion: table };
  };
  const send = (eventType: EventType, object: unknown) => {
    if (!res.writableEnded) res.write(`${JSON.stringify({ type: eventType, object })}\n`);
  };

  if (replay === undefined) {
    const status = errors
      .gone(`too old resource version: ${rvParam} (${ctx.store.oldestRv() + 1})`)
      .toStatus();
    send('ERROR', status);
    res.end();
    return;
  }

  const key = typeKey(type);
  const inScope = (obj: KubeObject) => !namespace || obj.metadata.namespace === namespace;
  const matches = (obj: KubeObject | undefined) =>
    obj !== undefined && inScope(obj) && matchesQuery(obj, query);
  const onEvent = (ev: StoreEvent) => {
    if (ev.typeKey !== key) return;
    const now = matches(ev.object);
    if (ev.type === 'ADDED') {
      if (now) send('ADDED', render(ev.object));
    } else if (ev.type === 'DELETED') {
      if (now || matches(ev.previous)) send('DELETED', render(ev.object));
    } else {
      const before = matches(ev.previous);
      if (now && before) send('MODIFIED', render(ev.object));
      else if (now) send('ADDED', render(ev.object));
      else if (before) send('DELETED', render(ev.object));
    }
  };

  const bookmark = (annotations?: Record<string, string>) => {
    const metadata: Record<string, unknown> = {
      resourceVersion: String(ctx.store.currentRv()),
      creationTimestamp: null,
    };
    if (annotations) metadata.annotations = annotations;
    send('BOOKMARK', { kind: type.kind, apiVersion: apiVersionOf(type), metadata });
  };

  if (initial) {
    for (const obj of ctx.store.list(type, namespace)) if (matches(obj)) send('ADDED', render(obj));
    if (sendInitialEvents === 'true' && bookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
  } else for (const ev of replay) onEvent(ev);

  const unsubscribe = ctx.store.subscribe(onEvent);
  ctx.watches.add(res);
  const timers: NodeJS.Timeout[] = [setTimeout(() => res.end(), timeoutSeconds * 1000)];
  if (bookmarks) timers.push(setInterval(() => bookmark(), ctx.bookmarkIntervalMs));
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    ctx.watches.delete(res);
    if (!res.writableEnded) res.end();
  };
  // Not req 'close': since Node 16 it fires once the (empty) request body is consumed.
  res.on('close', cleanup);
  res.on('finish', cleanup);
}
