import { createHash } from 'node:crypto';
import type { ResourceRegistry, ResourceType } from './resource-registry.js';

/**
 * Minimal OpenAPI documents. The v3 per-group-version documents declare the
 * `fieldValidation` query parameter on every PATCH operation, which makes kubectl hand
 * schema validation to the server (which accepts what it is sent) instead of validating
 * client-side; no schemas are published, so client-side apply falls back to its built-in
 * patch metadata. `/openapi/v2` answers an empty document (empty protobuf for clients asking for protobuf).
 */

const query = (name: string, description: string) => ({
  name,
  in: 'query',
  description,
  schema: { type: 'string', uniqueItems: true },
});

const WRITE_PARAMS = [
  query('dryRun', 'When present, indicates that modifications should not be persisted.'),
  query(
    'fieldManager',
    'fieldManager is a name associated with the actor or entity that is making these changes.',
  ),
  query(
    'fieldValidation',
    'fieldValidation instructs the server on how to handle objects with unknown or duplicate fields.',
  ),
];

function opId(verb: string, t: ResourceType): string {
  const group = t.group ? t.group.split('.')[0]! : 'core';
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  return `${verb}${cap(group)}${cap(t.version)}${t.namespaced ? 'Namespaced' : ''}${t.kind}`;
}

function operation(verb: string, action: string, t: ResourceType, params: unknown[] = []) {
  return {
    operationId: opId(verb, t),
    parameters: params,
    responses: { '200': { description: 'OK' } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: t.group, version: t.version, kind: t.kind },
  };
}

function prefix(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

export function openApiV3GroupVersion(registry: ResourceRegistry, group: string, version: string) {
  const types = registry.all().filter((t) => t.group === group && t.version === version);
  if (types.length === 0) return undefined;
  const paths: Record<string, unknown> = {};
  for (const t of types) {
    const base = `${prefix(group, version)}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.resource}`;
    paths[base] = {
      get: operation('list', 'list', t),
      post: operation('create', 'post', t, WRITE_PARAMS),
      delete: operation('deleteCollection', 'deletecollection', t),
    };
    paths[`${base}/{name}`] = {
      get: operation('read', 'get', t),
      put: operation('replace', 'put', t, WRITE_PARAMS),
      patch: operation('patch', 'patch', t, [
        ...WRITE_PARAMS,
        query('force', 'Force is going to "force" Apply requests.'),
      ]),
      delete: operation('delete', 'delete', t),
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'unversioned' },
    paths,
    components: { schemas: {} },
  };
}

export function openApiV3Root(registry: ResourceRegistry) {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [group, versions] of registry.groupVersions()) {
    for (const version of versions) {
      const key = group ? `apis/${group}/${version}` : `api/${version}`;
      const doc = JSON.stringify(openApiV3GroupVersion(registry, group, version));
      const hash = createHash('sha512').update(doc).digest('hex').slice(0, 64).toUpperCase();
      paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
    }
  }
  return { paths };
}

export function openApiV2(gitVersion: string) {
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes', version: gitVersion },
    paths: {},
    definitions: {},
  };
}
