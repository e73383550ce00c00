import { type ObjectRef, refKey } from '../../src/index.js';

export type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

export const trackingId = (app: string, group: string, kind: string, ns: string, name: string) =>
  `${app}:${group}/${kind}:${ns}/${name}`;

let uidSeq = 0;
export const uid = (hint: string) => `${hint}-0000-4000-8000-${String(++uidSeq).padStart(12, '0')}`;

export function ownerRef(o: Obj, controller = true) {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    name: o.metadata.name,
    uid: o.metadata.uid,
    controller,
    blockOwnerDeletion: true,
  };
}

export function deployment(
  name: string,
  ns = 'guestbook',
  opts: { tracked?: boolean; app?: string } = {},
): Obj {
  const annotations: Record<string, string> = { 'deployment.kubernetes.io/revision': '3' };
  if (opts.tracked !== false) {
    annotations['argocd.argoproj.io/tracking-id'] = trackingId(
      opts.app ?? 'guestbook',
      'apps',
      'Deployment',
      ns,
      name,
    );
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: ns,
      uid: uid('deploy'),
      resourceVersion: '81234',
      generation: 3,
      labels: { app: name },
      annotations,
      creationTimestamp: '2024-05-01T10:00:00Z',
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name: 'web',
              image: 'gcr.io/heptio-images/ks-guestbook-demo:0.2',
              ports: [{ containerPort: 80 }],
            },
          ],
        },
      },
    },
    status: { replicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: 3 },
  };
}

export function replicaSet(name: string, owner: Obj | undefined, ns = 'guestbook'): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name,
      namespace: ns,
      uid: uid('rs'),
      resourceVersion: '81240',
      labels: { app: 'guestbook-ui', 'pod-template-hash': name.split('-').pop() },
      annotations: { 'deployment.kubernetes.io/desired-replicas': '2' },
      ...(owner ? { ownerReferences: [ownerRef(owner)] } : {}),
    },
    spec: { replicas: 2, selector: { matchLabels: { app: 'guestbook-ui' } } },
    status: { replicas: 2, readyReplicas: 2 },
  };
}

export function pod(
  name: string,
  owner: Obj | undefined,
  ns = 'guestbook',
  extra: Record<string, unknown> = {},
): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: ns,
      uid: uid('pod'),
      resourceVersion: '81250',
      labels: { app: 'guestbook-ui' },
      ...(owner ? { ownerReferences: [ownerRef(owner)] } : {}),
      ...extra,
    },
    spec: {
      nodeName: 'worker-1',
      containers: [{ name: 'web', image: 'gcr.io/heptio-images/ks-guestbook-demo:0.2' }],
    },
    status: { phase: 'Running', podIP: '10.244.1.7', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** A fake cluster behind getObject that counts lookups and can fail on demand. */
export class FakeCluster {
  readonly objects = new Map<string, Obj>();
  readonly failing = new Set<string>();
  calls: ObjectRef[] = [];
  /** Kinds whose owner references must be looked up without a namespace. */
  readonly clusterScoped = new Set(['Node', 'Namespace', 'ClusterRole', 'Widget']);

  add(...objs: Obj[]): this {
    for (const o of objs) this.objects.set(this.keyOf(o), o);
    return this;
  }

  remove(o: Obj): void {
    this.objects.delete(this.keyOf(o));
  }

  keyOf(o: Obj): string {
    const ns = this.clusterScoped.has(String(o.kind))
      ? undefined
      : (o.metadata.namespace as string | undefined);
    return refKey({
      apiVersion: String(o.apiVersion),
      kind: String(o.kind),
      name: String(o.metadata.name),
      namespace: ns,
    });
  }

  get count(): number {
    return this.calls.length;
  }

  getObject = async (ref: ObjectRef): Promise<unknown> => {
    this.calls.push(ref);
    const key = refKey(this.clusterScoped.has(ref.kind) ? { ...ref, namespace: undefined } : ref);
    if (this.failing.has(key)) throw new Error(`forbidden: ${key}`);
    // Answer asynchronously like a real API call.
    await new Promise((r) => setImmediate(r));
    const o = this.objects.get(key);
    return o === undefined ? undefined : structuredClone(o);
  };
}

export function list(kind: string, items: unknown[], meta: Record<string, unknown> = {}) {
  return {
    kind,
    apiVersion: 'v1',
    metadata: { resourceVersion: '81299', continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6ODEyOTl9', ...meta },
    items,
  };
}

/** Reduces an object to what a Table row carries with includeObject=Metadata. */
export function partial(o: Obj) {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
}

export const podColumns = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'Name must be unique within a namespace.',
    priority: 0,
  },
  {
    name: 'Ready',
    type: 'string',
    format: '',
    description: 'The aggregate readiness state of this pod',
    priority: 0,
  },
  {
    name: 'Status',
    type: 'string',
    format: '',
    description: 'The aggregate status of the containers',
    priority: 0,
  },
  {
    name: 'Restarts',
    type: 'string',
    format: '',
    description: 'The number of times the containers restarted',
    priority: 0,
  },
  { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp', priority: 0 },
];

export function table(objs: Obj[], withColumns = true) {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '81299' },
    columnDefinitions: withColumns ? podColumns : [],
    rows: objs.map((o) => ({ cells: [o.metadata.name, '1/1', 'Running', '0', '5m'], object: partial(o) })),
  };
}

export const names = (items: unknown[]): string[] =>
  items.map((i) => String(((i as Obj).metadata ?? (i as { object: Obj }).object.metadata).name));
