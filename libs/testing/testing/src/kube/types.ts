/** Minimal typing for Kubernetes objects as the fake API server stores them (plain JSON). */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean | undefined;
  blockOwnerDeletion?: boolean | undefined;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string | undefined;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string | undefined;
}

export interface ObjectMeta {
  name?: string | undefined;
  generateName?: string | undefined;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  generation?: number | undefined;
  creationTimestamp?: string | undefined;
  deletionTimestamp?: string | undefined;
  deletionGracePeriodSeconds?: number | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  ownerReferences?: OwnerReference[] | undefined;
  finalizers?: string[] | undefined;
  managedFields?: ManagedFieldsEntry[] | undefined;
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** Identifies one object: `{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'web' }`. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string | undefined;
  name: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export type JsonObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isPlainObject(a)) {
    if (!isPlainObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Kubernetes timestamps have second precision: `2024-05-01T10:00:00Z`. */
export function kubeTimestamp(date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
