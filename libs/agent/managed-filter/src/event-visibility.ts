import type { ManagedCheck, ManagedVerdict, ObjectRef } from './managed-resolver.js';

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** True for core/v1 and events.k8s.io Events. */
export function isEventResource(group: string, resource: string): boolean {
  return resource === 'events' && (group === '' || group === 'events.k8s.io');
}

/**
 * The object an Event is about: `regarding` (events.k8s.io/v1) or `involvedObject` (core/v1).
 * Undefined when the reference lacks what a GET needs; such events stay hidden.
 */
export function eventSubject(event: unknown): ObjectRef | undefined {
  const ev = record(event);
  const target = record(ev?.regarding) ?? record(ev?.involvedObject);
  const apiVersion = str(target?.apiVersion);
  const kind = str(target?.kind);
  const name = str(target?.name);
  if (!apiVersion || !kind || !name) return undefined;
  const ref: ObjectRef = { apiVersion, kind, name };
  const namespace = str(target?.namespace);
  if (namespace !== undefined) ref.namespace = namespace;
  const uid = str(target?.uid);
  if (uid !== undefined) ref.uid = uid;
  return ref;
}

/** An Event is visible exactly when the object it refers to is managed. */
export async function eventVerdict(event: unknown, check: ManagedCheck): Promise<ManagedVerdict> {
  if (!record(event)) return 'unmanaged';
  const ref = eventSubject(event);
  return ref ? check.resolveRef(ref) : 'unknown';
}
