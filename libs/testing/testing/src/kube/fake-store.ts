import type { KubeApi } from './kube-api.js';
import { resolveContainer } from './log-handler.js';
import type { StoreEvent } from './object-store.js';
import { matchesLabels, parseLabelSelector } from './selectors.js';
import { clone, type KubeObject, type ObjectRef } from './types.js';

export interface StoreListFilter {
  apiVersion: string;
  kind: string;
  namespace?: string | undefined;
  labelSelector?: string | undefined;
}

/**
 * The test-facing side of the fake cluster: direct reads and writes that bypass HTTP
 * and admission (status is stored as given), but still bump resourceVersions and
 * notify watchers, so they look like controller activity to clients.
 */
export interface FakeKubeStore {
  /** Creates or replaces an object (namespace defaults to "default" and is created if missing). */
  put(obj: KubeObject): KubeObject;
  get(ref: ObjectRef): KubeObject | undefined;
  /** Deletes at once (finalizers ignored), garbage-collecting dependents. */
  delete(ref: ObjectRef): boolean;
  list(filter: StoreListFilter): KubeObject[];
  /** Read-modify-write helper, e.g. to flip a pod's status. Throws when the object is absent. */
  update(ref: ObjectRef, mutate: (obj: KubeObject) => void): KubeObject;
  /** Appends a line to a container's log (default: the pod's only/first container); followers get it at once. */
  appendPodLog(namespace: string, pod: string, line: string, opts?: { container?: string }): void;
  /** Current global resourceVersion. */
  resourceVersion(): string;
  /** Drops watch history: watches/lists from older resourceVersions get 410 Expired. */
  compact(): void;
  /** Every committed change, for assertions; returns an unsubscribe function. */
  onChange(listener: (event: StoreEvent) => void): () => void;
}

export function createFakeKubeStore(api: KubeApi): FakeKubeStore {
  const typeOf = (ref: { apiVersion: string; kind: string }) =>
    api.registry.require(ref.apiVersion, ref.kind);
  const nsOf = (ref: ObjectRef) => (typeOf(ref).namespaced ? (ref.namespace ?? 'default') : undefined);
  return {
    put: (obj) => api.put(obj),
    get(ref) {
      const obj = api.store.get(typeOf(ref), nsOf(ref), ref.name);
      return obj ? clone(obj) : undefined;
    },
    delete: (ref) => api.remove(typeOf(ref), nsOf(ref), ref.name),
    list(filter) {
      const type = typeOf(filter);
      const selector = parseLabelSelector(filter.labelSelector);
      return api.store
        .list(type, filter.namespace)
        .filter((o) => matchesLabels(selector, o.metadata.labels))
        .map((o) => clone(o));
    },
    update(ref, mutate) {
      const current = api.store.get(typeOf(ref), nsOf(ref), ref.name);
      if (!current) throw new Error(`fake kube: ${ref.kind} ${ref.namespace ?? ''}/${ref.name} not found`);
      const next = clone(current);
      mutate(next);
      return api.put(next);
    },
    appendPodLog(namespace, pod, line, opts = {}) {
      const podType = api.registry.require('v1', 'Pod');
      const obj = api.store.get(podType, namespace, pod);
      if (!obj) throw new Error(`fake kube: appendPodLog: pod ${namespace}/${pod} not found`);
      const container = opts.container ?? resolveContainerLenient(obj);
      api.logs.append(namespace, pod, container, line);
    },
    resourceVersion: () => String(api.store.currentRv()),
    compact: () => api.store.compact(),
    onChange: (listener) => api.store.subscribe(listener),
  };
}

/** The container `kubectl logs` without -c would pick; the first one when there are several. */
function resolveContainerLenient(pod: KubeObject): string {
  try {
    return resolveContainer(pod, null);
  } catch {
    const spec = pod.spec as { containers?: { name?: string }[] } | undefined;
    return spec?.containers?.[0]?.name ?? '';
  }
}
