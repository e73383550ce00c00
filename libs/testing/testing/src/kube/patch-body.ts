import { parse as parseYaml } from 'yaml';
import { applyJsonPatch, PatchApplyError, PatchFormatError } from './json-patch.js';
import { applyMergePatch, strategicMerge } from './merge-patch.js';
import { apiVersionOf, type ResourceType } from './resource-registry.js';
import { errors, StatusError } from './status.js';
import { isPlainObject, type KubeObject } from './types.js';

/** Applies a json/merge/strategic patch body to the live object, with the server's error mapping. */
export function patchObject(
  type: ResourceType,
  prev: KubeObject,
  patchType: 'json' | 'merge' | 'strategic',
  rawBody: string,
): KubeObject {
  const name = prev.metadata.name ?? '';
  let patch: unknown;
  try {
    patch = JSON.parse(rawBody);
  } catch (err) {
    throw errors.badRequest(`error decoding patch: ${(err as Error).message}`);
  }
  let patched: unknown;
  try {
    if (patchType === 'json') patched = applyJsonPatch(prev, patch);
    else if (patchType === 'merge') patched = applyMergePatch(prev, patch);
    else patched = strategicMerge(prev, patch);
  } catch (err) {
    if (err instanceof PatchFormatError) throw errors.badRequest(err.message);
    if (err instanceof PatchApplyError) {
      throw new StatusError(
        422,
        'Invalid',
        `the server rejected our request due to an error in our request: ${err.message}`,
      );
    }
    throw err;
  }
  if (!isPlainObject(patched) || !isPlainObject(patched.metadata)) {
    throw errors.badRequest('the patched object is not a valid Kubernetes object');
  }
  const candidate = patched as KubeObject;
  if (
    candidate.metadata.name !== name ||
    candidate.apiVersion !== prev.apiVersion ||
    candidate.kind !== prev.kind
  ) {
    throw errors.invalid(type.kind, type.group, name, [
      { type: 'FieldValueInvalid', message: 'Invalid value: field is immutable', field: 'metadata.name' },
    ]);
  }
  return candidate;
}

/** Decodes and checks a server-side apply body (`application/apply-patch+yaml`; JSON is YAML too). */
export function parseAppliedConfig(type: ResourceType, name: string, rawBody: string): KubeObject {
  let applied: unknown;
  try {
    applied = parseYaml(rawBody);
  } catch (err) {
    throw errors.badRequest(`error decoding YAML: ${(err as Error).message}`);
  }
  if (!isPlainObject(applied) || !isPlainObject(applied.metadata)) {
    throw errors.badRequest('the applied configuration must be an object with metadata');
  }
  const config = applied as KubeObject;
  if (config.apiVersion !== apiVersionOf(type) || config.kind !== type.kind) {
    throw errors.badRequest(
      `the apiVersion/kind in the applied configuration (${String(config.apiVersion)}, ${String(config.kind)}) does not match the request (${apiVersionOf(type)}, ${type.kind})`,
    );
  }
  if (config.metadata.name !== undefined && config.metadata.name !== name) {
    throw errors.badRequest(
      `the name of the object (${String(config.metadata.name)}) does not match the name on the URL (${name})`,
    );
  }
  config.metadata.name = name;
  return config;
}
