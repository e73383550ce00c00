import type { ResourceType } from './resource-registry.js';
import { typeKey } from './resource-registry.js';
import type { KubeObject, WatchEventType } from './types.js';

/** One committed change; `previous` lets history be rewound for consistent paged lists. */
export interface StoreEvent {
  rv: number;
  type: WatchEventType;
  typeKey: string;
  object: KubeObject;
  previous?: KubeObject | undefined;
}

export type StoreListener = (event: StoreEvent) => void;

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * The "etcd" of the fake server: objects per resource type, a global resourceVersion
 * counter, a bounded history of changes (for watch resumption and 410 Gone) and change
 * listeners. Stored objects are never mutated in place; writers commit new objects.
 */
export class ObjectStore {
  private readonly data = new Map<string, Map<string, KubeObject>>();
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<StoreListener>();
  private rv: number;
  /** Oldest resourceVersion that can still be watched from / listed at. */
  private compactedRv: number;

  constructor(
    private readonly historyLimit = 5000,
    initialRv = 1000,
  ) {
    this.rv = initialRv;
    this.compactedRv = initialRv;
  }

  currentRv(): number {
    return this.rv;
  }

  oldestRv(): number {
    return this.compactedRv;
  }

  nextRv(): number {
    this.rv += 1;
    return this.rv;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.data.get(typeKey(type))?.get(objectKey(type.namespaced ? namespace : undefined, name));
  }

  /** Objects of a type (optionally one namespace), sorted by namespace/name like etcd keys. */
  list(type: ResourceType, namespace?: string): KubeObject[] {
    const bucket = this.data.get(typeKey(type));
    if (!bucket) return [];
    const out: KubeObject[] = [];
    for (const obj of bucket.values()) {
      if (namespace && type.namespaced && obj.metadata.namespace !== namespace) continue;
      out.push(obj);
    }
    return out.sort((a, b) => compareKeys(a, b));
  }

  /** Objects of a type as they were at resourceVersion `rv`, rewinding the history. */
  listAt(type: ResourceType, rv: number, namespace?: string): KubeObject[] | undefined {
    if (rv < this.compactedRv) return undefined;
    const key = typeKey(type);
    const state = new Map<string, KubeObject>();
    for (const obj of this.list(type))
      state.set(objectKey(obj.metadata.namespace, obj.metadata.name ?? ''), obj);
    for (let i = this.history.length - 1; i >= 0; i--) {
      const ev = this.history[i]!;
      if (ev.rv <= rv) break;
      if (ev.typeKey !== key) continue;
      const k = objectKey(ev.object.metadata.namespace, ev.object.metadata.name ?? '');
      if (ev.type === 'ADDED') state.delete(k);
      else if (ev.type === 'MODIFIED' && ev.previous) state.set(k, ev.previous);
      else if (ev.type === 'DELETED') state.set(k, ev.previous ?? ev.object);
    }
    return [...state.values()]
      .filter((o) => !namespace || !type.namespaced || o.metadata.namespace === namespace)
      .sort(compareKeys);
  }

  /**
   * Stores the object (which must already carry the new resourceVersion) and notifies
   * listeners synchronously, so a watch started before the call sees the change.
   */
  commit(type: ResourceType, eventType: WatchEventType, object: KubeObject, previous?: KubeObject): void {
    const key = typeKey(type);
    let bucket = this.data.get(key);
    if (!bucket) {
      bucket = new Map();
      this.data.set(key, bucket);
    }
    const k = objectKey(type.namespaced ? object.metadata.namespace : undefined, object.metadata.name ?? '');
    if (eventType === 'DELETED') bucket.delete(k);
    else bucket.set(k, object);
    const rv = Number(object.metadata.resourceVersion);
    const event: StoreEvent = { rv, type: eventType, typeKey: key, object, previous };
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedRv = dropped[dropped.length - 1]!.rv;
    }
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        // One broken watcher must not fail the write or starve the other watchers.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  /** Events after `rv` (exclusive), or undefined when that part of history was compacted away. */
  eventsSince(rv: number): StoreEvent[] | undefined {
    if (rv < this.compactedRv) return undefined;
    let start = this.history.length;
    while (start > 0 && this.history[start - 1]!.rv > rv) start--;
    return this.history.slice(start);
  }

  /** Forgets all history up to now: any older resourceVersion becomes "too old" (410). */
  compact(): void {
    this.history.length = 0;
    this.compactedRv = this.rv;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  listenerCount(): number {
    return this.listeners.size;
  }

  /** Every stored object of every type (used for garbage collection of dependents). */
  *allObjects(): Generator<[string, KubeObject]> {
    for (const [key, bucket] of this.data) for (const obj of bucket.values()) yield [key, obj];
  }
}

function compareKeys(a: KubeObject, b: KubeObject): number {
  const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name ?? ''}`;
  const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
