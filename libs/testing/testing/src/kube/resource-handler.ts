import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  decodeObjectBody,
  mediaType,
  parseBoolParam,
  parseIntParam,
  readBody,
  sendJson,
  setResponseFormat,
  tableVersion,
} from './http-io.js';
import { applyJsonPatch } from './json-patch.js';
import type { DeleteOptions, WriteOptions } from './kube-api.js';
import { PATCH_CONTENT_TYPES } from './kube-api.js';
import { listObjects, matchesQuery } from './list-query.js';
import { handleLogs } from './log-handler.js';
import { applyMergePatch } from './merge-patch.js';
import { negotiateFormat } from './negotiation.js';
import { verbOf } from './rbac.js';
import type { ResourceRoute } from './request-path.js';
import { apiVersionOf, type ResourceType } from './resource-registry.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { reviewAccess } from './self-subject-access-review.js';
import type { ServerContext } from './server-context.js';
import { errors, StatusError } from './status.js';
import { parseIncludeObject, toTable } from './table.js';
import { clone, isPlainObject, type KubeObject } from './types.js';
import { handleWatch } from './watch-handler.js';

const STREAMING_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy']);

/** Field manager name when the request names none: the User-Agent's first word (`kubectl`, `node-fetch`). */
function defaultManager(req: IncomingMessage): string {
  const ua = req.headers['user-agent'] ?? '';
  return ua.split('/')[0]?.trim() || 'unknown';
}

function writeOptions(req: IncomingMessage, params: URLSearchParams, subresource?: string): WriteOptions {
  const dryRun = params.getAll('dryRun');
  if (dryRun.some((v) => v !== 'All'))
    throw errors.badRequest(`dryRun: Unsupported value: "${dryRun.join(',')}"`);
  return {
    manager: params.get('fieldManager') ?? defaultManager(req),
    dryRun: dryRun.length > 0,
    subresource,
  };
}

function listKind(type: ResourceType, items: KubeObject[], meta: Record<string, unknown>) {
  return { kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata: meta, items };
}

async function jsonBody(ctx: ServerContext, req: IncomingMessage): Promise<unknown> {
  return decodeObjectBody(req.headers['content-type'], await readBody(req), !ctx.strict);
}

/** Reviews about oneself are open to every authenticated user (system:basic-user). */
function isSelfReview(type: ResourceType): boolean {
  return type.group === 'authorization.k8s.io' && type.resource.startsWith('selfsubject');
}

export async function handleResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: ResourceRoute,
  params: URLSearchParams,
  user: string,
): Promise<void> {
  const { type, name, subresource } = route;
  const namespace = type.namespaced ? route.namespace : undefined;
  const method = req.method ?? 'GET';
  const watch = route.legacyWatch || parseBoolParam(params.get('watch'));
  if (!isSelfReview(type)) {
    ctx.rbac.authorize(user, {
      verb: verbOf(method, name !== undefined, watch && subresource === undefined),
      apiGroup: type.group,
      resource: type.resource,
      subresource,
      // The request-info resolver puts /api/v1/namespaces/{name} in namespace {name}, so Roles there apply.
      namespace: type.group === '' && type.resource === 'namespaces' ? name : namespace,
      name,
    });
  }
  if (ctx.strict && subresource !== 'log') {
    setResponseFormat(res, negotiateFormat(req.headers.accept, { watch }));
  }

  if (subresource !== undefined) {
    if (!type.subresources.includes(subresource)) throw errors.notFoundPath();
    if (STREAMING_SUBRESOURCES.has(subresource)) {
      throw new StatusError(400, 'BadRequest', 'Upgrade request required');
    }
    if (subresource === 'log') {
      if (method !== 'GET') throw errors.methodNotAllowed();
      handleLogs(ctx, res, route, params);
      return;
    }
    if (subresource === 'scale') return handleScale(ctx, req, res, route, params);
    if (subresource !== 'status') throw errors.methodNotAllowed();
  }

  if (subresource === undefined && !type.verbs.includes(verbOf(method, name !== undefined, watch))) {
    throw errors.methodNotAllowed();
  }
  if (type.kind === 'SelfSubjectAccessReview' && method === 'POST') {
    sendJson(res, 201, reviewAccess(ctx, user, await jsonBody(ctx, req)));
    return;
  }
  if (watch) {
    if (method !== 'GET') throw errors.methodNotAllowed();
    handleWatch(ctx, req, res, route, params);
    return;
  }

  const table = tableVersion(req.headers.accept);
  const include = parseIncludeObject(params.get('includeObject'));

  if (name === undefined) {
    const labelSelector = parseLabelSelector(params.get('labelSelector'));
    const fieldSelector = parseFieldSelector(params.get('fieldSelector'), type);
    if (method === 'GET') {
      const result = listObjects(ctx.store, type, {
        namespace,
        labelSelector,
        fieldSelector,
        limit: parseIntParam('limit', params.get('limit')),
        continueToken: params.get('continue') ?? undefined,
        resourceVersion: params.get('resourceVersion') ?? undefined,
        resourceVersionMatch: params.get('resourceVersionMatch') ?? undefined,
      });
      const meta: Record<string, unknown> = { resourceVersion: result.resourceVersion };
      if (result.continueToken) meta.continue = result.continueToken;
      if (result.remainingItemCount !== undefined) meta.remainingItemCount = result.remainingItemCount;
      if (table) {
        const t = toTable(type, result.items, include, meta as { resourceVersion: string });
        sendJson(res, 200, { ...t, apiVersion: table });
      } else sendJson(res, 200, listKind(type, result.items, meta));
      return;
    }
    if (method === 'POST') {
      const created = ctx.api.create(type, namespace, await jsonBody(ctx, req), writeOptions(req, params));
      sendJson(res, 201, created);
      return;
    }
    if (method === 'DELETE') {
      const opts = await deleteOptions(req, params);
      const deleted: KubeObject[] = [];
      for (const obj of ctx.store.list(type, namespace)) {
        if (!matchesQuery(obj, { labelSelector, fieldSelector })) continue;
        try {
          deleted.push(ctx.api.delete(type, obj.metadata.namespace, obj.metadata.name ?? '', opts).object);
        } catch (err) {
          if (!(err instanceof StatusError && err.code === 404)) throw err;
        }
      }
      sendJson(res, 200, listKind(type, deleted, { resourceVersion: String(ctx.store.currentRv()) }));
      return;
    }
    throw errors.methodNotAllowed();
  }

  switch (method) {
    case 'GET': {
      const obj = ctx.api.get(type, namespace, name);
      if (table) {
        const t = toTable(type, [obj], include, { resourceVersion: obj.metadata.resourceVersion ?? '' });
        sendJson(res, 200, { ...t, apiVersion: table });
      } else sendJson(res, 200, obj);
      return;
    }
    case 'PUT': {
      const updated = ctx.api.update(
        type,
        namespace,
        name,
        await jsonBody(ctx, req),
        writeOptions(req, params, subresource),
      );
      sendJson(res, 200, updated);
      return;
    }
    case 'PATCH': {
      const contentType = mediaType(req.headers['content-type']);
      const patchType = PATCH_CONTENT_TYPES[contentType];
      if (!patchType) {
        throw errors.unsupportedMediaType(contentType, Object.keys(PATCH_CONTENT_TYPES));
      }
      const opts = writeOptions(req, params, subresource);
      const body = await readBody(req);
      const { object, created } = ctx.api.patch(type, namespace, name, patchType, body, {
        ...opts,
        force: parseBoolParam(params.get('force')),
        explicitManager: params.has('fieldManager'),
      });
      sendJson(res, created ? 201 : 200, object);
      return;
    }
    case 'DELETE': {
      if (subresource) throw errors.methodNotAllowed();
      const { object, deferred } = ctx.api.delete(type, namespace, name, await deleteOptions(req, params));
      sendJson(res, deferred ? 202 : 200, object);
      return;
    }
    default:
      throw errors.methodNotAllowed();
  }
}

/** DeleteOptions from the JSON body kubectl sends, overridden by query parameters. */
async function deleteOptions(req: IncomingMessage, params: URLSearchParams): Promise<DeleteOptions> {
  const raw = await readBody(req);
  let body: Record<string, unknown> = {};
  if (raw.trim() !== '') {
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (isPlainObject(parsed)) body = parsed;
    } catch {
      throw errors.badRequest('the DeleteOptions body is not valid JSON');
    }
  }
  const policy = params.get('propagationPolicy') ?? body.propagationPolicy;
  const dryRun =
    params.getAll('dryRun').includes('All') || (Array.isArray(body.dryRun) && body.dryRun.includes('All'));
  const pre = isPlainObject(body.preconditions) ? body.preconditions : {};
  return {
    propagationPolicy: policy === 'Orphan' || policy === 'Foreground' ? policy : 'Background',
    dryRun,
    preconditions: {
      uid: typeof pre.uid === 'string' ? pre.uid : undefined,
      resourceVersion: typeof pre.resourceVersion === 'string' ? pre.resourceVersion : undefined,
    },
  };
}

function selectorString(obj: KubeObject): string {
  const spec = isPlainObject(obj.spec) ? obj.spec : {};
  const selector = isPlainObject(spec.selector) ? spec.selector : {};
  const labels = isPlainObject(selector.matchLabels) ? selector.matchLabels : {};
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
}

function toScale(obj: KubeObject) {
  const spec = isPlainObject(obj.spec) ? obj.spec : {};
  const status = isPlainObject(obj.status) ? obj.status : {};
  const m = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: typeof spec.replicas === 'number' ? spec.replicas : 1 },
    status: {
      replicas: typeof status.replicas === 'number' ? status.replicas : 0,
      selector: selectorString(obj),
    },
  };
}

/** `…/scale`: an autoscaling/v1 Scale view onto spec.replicas (what `kubectl scale` patches). */
async function handleScale(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: ResourceRoute,
  params: URLSearchParams,
): Promise<void> {
  const { type, name = '' } = route;
  const namespace = type.namespaced ? route.namespace : undefined;
  const obj = ctx.api.get(type, namespace, name);
  const method = req.method ?? 'GET';
  if (method === 'GET') {
    sendJson(res, 200, toScale(obj));
    return;
  }
  let scale: unknown;
  if (method === 'PUT') scale = await jsonBody(ctx, req);
  else if (method === 'PATCH') {
    const contentType = mediaType(req.headers['content-type']);
    const body = JSON.parse((await readBody(req)) || 'null') as unknown;
    if (contentType === 'application/json-patch+json') scale = applyJsonPatch(toScale(obj), body);
    else if (PATCH_CONTENT_TYPES[contentType]) scale = applyMergePatch(toScale(obj), body);
    else throw errors.unsupportedMediaType(contentType, Object.keys(PATCH_CONTENT_TYPES));
  } else throw errors.methodNotAllowed();
  const s = isPlainObject(scale) ? scale : {};
  const replicas = isPlainObject(s.spec) ? s.spec.replicas : undefined;
  if (typeof replicas !== 'number' || replicas < 0) {
    throw errors.invalid('Scale', 'autoscaling', name, [
      {
        type: 'FieldValueInvalid',
        message: 'Invalid value: must be greater than or equal to 0',
        field: 'spec.replicas',
      },
    ]);
  }
  const next = clone(obj);
  next.spec = { ...(isPlainObject(next.spec) ? next.spec : {}), replicas };
  const sentRv = isPlainObject(s.metadata) ? s.metadata.resourceVersion : undefined;
  if (typeof sentRv === 'string') next.metadata.resourceVersion = sentRv;
  const updated = ctx.api.commitUpdate(type, obj, next, writeOptions(req, params), false);
  sendJson(res, 200, toScale(updated));
}
