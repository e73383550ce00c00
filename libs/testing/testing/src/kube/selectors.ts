import type { ResourceType } from './resource-registry.js';
import { errors } from './status.js';
import { isPlainObject, type KubeObject } from './types.js';

type LabelRequirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: '=' | '!='; values: [string] }
  | { key: string; op: 'exists' | '!exists' };

export type LabelSelector = LabelRequirement[];

/** Splits on commas that are not inside a `( … )` value set. */
function splitTopLevel(input: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of input) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, raw: string): string {
  if (!LABEL_KEY.test(key))
    throw errors.badRequest(`unable to parse requirement: invalid label key "${key}" in "${raw}"`);
  return key;
}
function checkValue(value: string, raw: string): string {
  if (!LABEL_VALUE.test(value) || value.length > 63) {
    throw errors.badRequest(`unable to parse requirement: invalid label value: "${value}" in "${raw}"`);
  }
  return value;
}

/** Parses the `labelSelector` query syntax: `a=b,c!=d,e in (x,y),f notin (z),g,!h`. */
export function parseLabelSelector(raw: string | null | undefined): LabelSelector {
  if (!raw) return [];
  return splitTopLevel(raw).map((part): LabelRequirement => {
    const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part);
    if (set) {
      const values = set[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '')
        .map((v) => checkValue(v, raw));
      return { key: checkKey(set[1]!, raw), op: set[2] as 'in' | 'notin', values };
    }
    const neq = /^([^=!\s]+)\s*!=\s*(.*)$/.exec(part);
    if (neq) return { key: checkKey(neq[1]!, raw), op: '!=', values: [checkValue(neq[2]!.trim(), raw)] };
    const eq = /^([^=!\s]+)\s*==?\s*(.*)$/.exec(part);
    if (eq) return { key: checkKey(eq[1]!, raw), op: '=', values: [checkValue(eq[2]!.trim(), raw)] };
    if (part.startsWith('!')) return { key: checkKey(part.slice(1).trim(), raw), op: '!exists' };
    return { key: checkKey(part, raw), op: 'exists' };
  });
}

export function matchesLabels(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return selector.every((req) => {
    const has = Object.hasOwn(l, req.key);
    const value = l[req.key];
    switch (req.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case '=':
        return has && value === req.values[0];
      case '!=':
        return !has || value !== req.values[0];
      case 'in':
        return has && req.values.includes(value!);
      case 'notin':
        return !has || !req.values.includes(value!);
    }
    return false;
  });
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}
export type FieldSelector = FieldRequirement[];

/** Parses `fieldSelector` (`a=b,c!=d`) and rejects fields the resource does not index, as the server does. */
export function parseFieldSelector(raw: string | null | undefined, type: ResourceType): FieldSelector {
  if (!raw) return [];
  return splitTopLevel(raw).map((part) => {
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(part);
    if (!m) throw errors.badRequest(`invalid selector: '${raw}'; can't understand '${part}'`);
    const field = m[1]!.trim();
    const allowed =
      field === 'metadata.name' || field === 'metadata.namespace' || type.fieldSelectors.includes(field);
    if (!allowed) {
      throw errors.badRequest(`field label not supported: ${field}`);
    }
    return { field, op: m[2] === '!=' ? '!=' : '=', value: m[3]!.trim() };
  });
}

/** Field values as the server indexes them: strings, numbers and booleans stringified; `source` is the component. */
export function fieldValue(obj: KubeObject, field: string): string {
  if (field === 'source') {
    const src = obj.source;
    return isPlainObject(src) && typeof src.component === 'string' ? src.component : '';
  }
  let cur: unknown = obj;
  for (const part of field.split('.')) {
    cur = isPlainObject(cur) ? cur[part] : undefined;
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

export function matchesFields(selector: FieldSelector, obj: KubeObject): boolean {
  return selector.every((req) => {
    const v = fieldValue(obj, req.field);
    return req.op === '=' ? v === req.value : v !== req.value;
  });
}
