import { mergeKeyFor } from './list-keys.js';
import { deepEqual, isPlainObject, type JsonObject } from './types.js';

/**
 * Field paths in the structured-merge-diff notation used by `metadata.managedFields`:
 * `f:<field>` for map fields and `k:{"name":"web"}` for items of keyed lists. A path is
 * stored as the JSON of its segment array so sets of paths are plain Set<string>.
 */
export type FieldPath = string[];

export const NOT_FOUND = Symbol('not-found');

const METADATA_TRACKED = ['labels', 'annotations', 'finalizers', 'ownerReferences'];

export function pathKey(path: FieldPath): string {
  return JSON.stringify(path);
}
export function parsePathKey(key: string): FieldPath {
  return JSON.parse(key) as FieldPath;
}

function itemKey(key: string, item: JsonObject): string {
  return `k:${JSON.stringify({ [key]: item[key] })}`;
}

function walk(value: unknown, path: FieldPath, field: string, out: FieldPath[]): void {
  if (isPlainObject(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) out.push(path);
    for (const [k, v] of entries) walk(v, [...path, `f:${k}`], k, out);
    return;
  }
  if (Array.isArray(value) && value.length > 0) {
    const key = mergeKeyFor(field, value);
    if (key !== undefined && value.every((item) => isPlainObject(item) && item[key] !== undefined)) {
      for (const item of value as JsonObject[]) {
        const itemPath = [...path, itemKey(key, item)];
        out.push(itemPath);
        for (const [k, v] of Object.entries(item)) walk(v, [...itemPath, `f:${k}`], k, out);
      }
      return;
    }
  }
  out.push(path);
}

/** Every owned path of an object: leaves plus keyed list items; identity metadata is not tracked. */
export function collectPaths(obj: JsonObject): FieldPath[] {
  const out: FieldPath[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    if (k === 'metadata') {
      if (!isPlainObject(v)) continue;
      for (const m of METADATA_TRACKED) {
        if (v[m] !== undefined) walk(v[m], ['f:metadata', `f:${m}`], m, out);
      }
      continue;
    }
    walk(v, [`f:${k}`], k, out);
  }
  return out;
}

function childOf(container: unknown, segment: string): unknown {
  if (segment.startsWith('f:')) {
    const name = segment.slice(2);
    return isPlainObject(container) && Object.hasOwn(container, name) ? container[name] : NOT_FOUND;
  }
  if (segment.startsWith('k:') && Array.isArray(container)) {
    const match = JSON.parse(segment.slice(2)) as JsonObject;
    const [key, want] = Object.entries(match)[0] ?? [];
    const found = container.find(
      (item) => isPlainObject(item) && key !== undefined && deepEqual(item[key], want),
    );
    return found === undefined ? NOT_FOUND : found;
  }
  return NOT_FOUND;
}

export function getAtPath(obj: unknown, path: FieldPath): unknown {
  let cur: unknown = obj;
  for (const segment of path) {
    cur = childOf(cur, segment);
    if (cur === NOT_FOUND) return NOT_FOUND;
  }
  return cur;
}

/** Removes the field or list item at path (in place). */
export function deleteAtPath(obj: unknown, path: FieldPath): void {
  const parent = getAtPath(obj, path.slice(0, -1));
  const last = path[path.length - 1];
  if (parent === NOT_FOUND || last === undefined) return;
  if (last.startsWith('f:') && isPlainObject(parent)) delete parent[last.slice(2)];
  else if (last.startsWith('k:') && Array.isArray(parent)) {
    const item = childOf(parent, last);
    const index = parent.indexOf(item);
    if (index >= 0) parent.splice(index, 1);
  }
}

/** `.spec.template.spec.containers[name="web"].image`, the form conflict messages use. */
export function formatPath(path: FieldPath): string {
  return path
    .map((segment) => {
      if (segment.startsWith('f:')) return `.${segment.slice(2)}`;
      const match = JSON.parse(segment.slice(2)) as JsonObject;
      return `[${Object.entries(match)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',')}]`;
    })
    .join('');
}

/** Encodes a set of paths as a FieldsV1 tree (`{"f:spec":{"f:replicas":{}}}`, `".": {}` marks owned items). */
export function toFieldsV1(keys: Iterable<string>): JsonObject {
  const root: JsonObject = {};
  for (const key of keys) {
    const path = parsePathKey(key);
    let node = root;
    for (const segment of path) {
      const next = (node[segment] as JsonObject | undefined) ?? {};
      node[segment] = next;
      node = next;
    }
    if (path[path.length - 1]?.startsWith('k:')) node['.'] = {};
  }
  return root;
}

export function fromFieldsV1(tree: unknown, prefix: FieldPath = [], out = new Set<string>()): Set<string> {
  if (!isPlainObject(tree)) return out;
  for (const [segment, child] of Object.entries(tree)) {
    if (segment === '.') {
      out.add(pathKey(prefix));
      continue;
    }
    const path = [...prefix, segment];
    if (isPlainObject(child) && Object.keys(child).length > 0) fromFieldsV1(child, path, out);
    else out.add(pathKey(path));
  }
  return out;
}

/**
 * Server-side-apply merge of an applied configuration onto the live object: maps merge,
 * keyed lists merge item by item, everything else (scalars, atomic lists) is replaced.
 */
export function applyMerge(live: unknown, applied: unknown, field = ''): unknown {
  if (isPlainObject(applied)) {
    const result: JsonObject = isPlainObject(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(applied)) result[k] = applyMerge(result[k], v, k);
    return result;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const key = mergeKeyFor(field, [...live, ...applied]);
    if (key !== undefined && [...live, ...applied].every((i) => isPlainObject(i) && i[key] !== undefined)) {
      const result = live.map((item) => structuredClone(item)) as JsonObject[];
      for (const item of applied as JsonObject[]) {
        const index = result.findIndex((r) => deepEqual(r[key], item[key]));
        if (index >= 0) result[index] = applyMerge(result[index], item) as JsonObject;
        else result.push(structuredClone(item));
      }
      return result;
    }
  }
  return structuredClone(applied);
}
