import { PatchFormatError } from './json-patch.js';
import { mergeKeyFor, PRIMITIVE_MERGE_LISTS } from './list-keys.js';
import { isPlainObject, type JsonObject } from './types.js';

/** RFC 7386 JSON Merge Patch: objects merge recursively, null deletes, everything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const result: JsonObject = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

const DELETE = Symbol('delete');

function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isPlainObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$patch' || k.startsWith('$')) continue;
    if (v !== null) out[k] = stripDirectives(v);
  }
  return out;
}

function mergeList(field: string, original: unknown, patch: unknown[]): unknown[] {
  const orig = Array.isArray(original) ? original : [];
  if (patch.some((item) => isPlainObject(item) && item.$patch === 'replace')) {
    return patch.filter((item) => !(isPlainObject(item) && item.$patch === 'replace')).map(stripDirectives);
  }
  if (PRIMITIVE_MERGE_LISTS.has(field)) {
    return [...orig, ...patch.filter((v) => !orig.includes(v))];
  }
  const key = mergeKeyFor(field, [...orig, ...patch]);
  if (key === undefined) return patch.map(stripDirectives);
  const result = orig.map((item) => structuredClone(item));
  for (const item of patch) {
    if (!isPlainObject(item)) continue;
    const index = result.findIndex((r) => isPlainObject(r) && r[key] === item[key]);
    if (item.$patch === 'delete') {
      if (index >= 0) result.splice(index, 1);
      continue;
    }
    if (index >= 0) result[index] = strategicMerge(result[index], item);
    else result.push(stripDirectives(item));
  }
  return result;
}

function merge(original: unknown, patch: JsonObject): unknown | typeof DELETE {
  if (patch.$patch === 'delete') return DELETE;
  if (patch.$patch === 'replace') return stripDirectives(patch);
  const result: JsonObject = isPlainObject(original) ? { ...original } : {};
  const orders: [string, unknown[]][] = [];
  let retainKeys: string[] | undefined;
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch') continue;
    if (key === '$retainKeys') {
      if (Array.isArray(value)) retainKeys = value.map(String);
      continue;
    }
    if (key.startsWith('$setElementOrder/')) {
      if (Array.isArray(value)) orders.push([key.slice('$setElementOrder/'.length), value]);
      continue;
    }
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const current = result[field];
      if (Array.isArray(current) && Array.isArray(value))
        result[field] = current.filter((v) => !value.includes(v));
      continue;
    }
    if (key.startsWith('$')) throw new PatchFormatError(`unknown patch directive ${key}`);
    if (value === null) delete result[key];
    else if (isPlainObject(value)) {
      const merged = merge(result[key], value);
      if (merged === DELETE) delete result[key];
      else result[key] = merged;
    } else if (Array.isArray(value)) result[key] = mergeList(key, result[key], value);
    else result[key] = value;
  }
  // kubectl sends $setElementOrder with client-side apply so list order follows the manifest.
  for (const [field, order] of orders) {
    const list = result[field];
    if (!Array.isArray(list)) continue;
    const key = mergeKeyFor(field, list);
    const pos = (item: unknown) =>
      order.findIndex((o) =>
        key && isPlainObject(o) && isPlainObject(item) ? o[key] === item[key] : o === item,
      );
    const ranked = list.map((item, i) => ({ item, i, p: pos(item) }));
    ranked.sort((a, b) => (a.p < 0 ? Infinity : a.p) - (b.p < 0 ? Infinity : b.p) || a.i - b.i);
    result[field] = ranked.map((r) => r.item);
  }
  if (retainKeys) {
    for (const key of Object.keys(result)) if (!retainKeys.includes(key)) delete result[key];
  }
  return result;
}

/**
 * Strategic merge patch, "good enough" for kubectl: maps merge, known lists merge by
 * their key (containers by name, ports by containerPort, …), `$patch: delete|replace`,
 * `$setElementOrder`, `$deleteFromPrimitiveList` and `$retainKeys` are honoured.
 */
export function strategicMerge(original: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const merged = merge(original, patch);
  return merged === DELETE ? {} : merged;
}
