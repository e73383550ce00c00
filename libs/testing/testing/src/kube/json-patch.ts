import { deepEqual, isPlainObject } from './types.js';

/** Thrown for patches that are well-formed but cannot be applied (HTTP 422). */
export class PatchApplyError extends Error {}
/** Thrown for patches that are not valid documents (HTTP 400). */
export class PatchFormatError extends Error {}

interface Operation {
  op: string;
  path: string;
  from?: string | undefined;
  value?: unknown | undefined;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchFormatError(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Container = Record<string, unknown> | unknown[];

function resolveParent(doc: unknown, tokens: string[], path: string): { parent: Container; key: string } {
  let cur: unknown = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, token, path, false)];
    else if (isPlainObject(cur) && Object.hasOwn(cur, token)) cur = cur[token];
    else throw new PatchApplyError(`doc is missing path: "${path}": missing value`);
  }
  if (!Array.isArray(cur) && !isPlainObject(cur)) {
    throw new PatchApplyError(`doc is missing path: "${path}": missing value`);
  }
  return { parent: cur, key: tokens[tokens.length - 1]! };
}

function arrayIndex(arr: unknown[], token: string, path: string, forInsert: boolean): number {
  if (token === '-' && forInsert) return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token))
    throw new PatchApplyError(`invalid array index "${token}" in "${path}"`);
  const i = Number(token);
  if (i > arr.length || (!forInsert && i === arr.length)) {
    throw new PatchApplyError(`unable to access invalid index: ${i} in "${path}"`);
  }
  return i;
}

function getAt(doc: unknown, path: string): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return doc;
  const { parent, key } = resolveParent(doc, tokens, path);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, key, path, false)];
  if (!Object.hasOwn(parent, key)) throw new PatchApplyError(`doc is missing path: "${path}": missing value`);
  return parent[key];
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = resolveParent(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, true), 0, value);
  else parent[key] = value;
  return doc;
}

function remove(doc: unknown, path: string): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) throw new PatchApplyError('cannot remove the whole document');
  const { parent, key } = resolveParent(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, false), 1);
  else {
    if (!Object.hasOwn(parent, key)) {
      throw new PatchApplyError(`Unable to remove nonexistent key: ${key}: missing value`);
    }
    delete parent[key];
  }
  return doc;
}

/** RFC 6902 JSON Patch. Works on a copy; the input document is not modified. */
export function applyJsonPatch(document: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new PatchFormatError('json patch must be an array of operations');
  let doc = structuredClone(document);
  for (const raw of patch) {
    if (!isPlainObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw new PatchFormatError('each json patch operation needs "op" and "path"');
    }
    const op = raw as unknown as Operation;
    switch (op.op) {
      case 'add':
        if (!('value' in raw)) throw new PatchFormatError(`add operation on "${op.path}" has no value`);
        doc = add(doc, op.path, structuredClone(op.value));
        break;
      case 'remove':
        doc = remove(doc, op.path);
        break;
      case 'replace':
        if (!('value' in raw)) throw new PatchFormatError(`replace operation on "${op.path}" has no value`);
        if (op.path === '') {
          doc = structuredClone(op.value);
          break;
        }
        getAt(doc, op.path); // replace requires the target to exist
        doc = remove(doc, op.path);
        doc = add(doc, op.path, structuredClone(op.value));
        break;
      case 'move': {
        if (typeof op.from !== 'string') throw new PatchFormatError('move operation needs "from"');
        const value = getAt(doc, op.from);
        doc = remove(doc, op.from);
        doc = add(doc, op.path, value);
        break;
      }
      case 'copy': {
        if (typeof op.from !== 'string') throw new PatchFormatError('copy operation needs "from"');
        doc = add(doc, op.path, structuredClone(getAt(doc, op.from)));
        break;
      }
      case 'test':
        if (!deepEqual(getAt(doc, op.path), op.value)) {
          throw new PatchApplyError(`testing value ${op.path} failed: test failed`);
        }
        break;
      default:
        throw new PatchFormatError(`Unexpected kind: ${op.op}`);
    }
  }
  return doc;
}
