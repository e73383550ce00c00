import { builtinColumns, type CrdPrinterColumn, crdColumns } from './printer-columns.js';
import {
  ResourceRegistry,
  type ResourceType,
  type ResourceTypeInit,
  STANDARD_VERBS,
} from './resource-registry.js';
import { isPlainObject, type KubeObject, kubeTimestamp } from './types.js';

const POD_FIELDS = [
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.schedulerName',
  'spec.serviceAccountName',
  'spec.hostNetwork',
  'status.phase',
  'status.podIP',
  'status.nominatedNodeName',
];
const EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
];

const argoApplicationColumns: CrdPrinterColumn[] = [
  { name: 'Sync Status', type: 'string', jsonPath: '.status.sync.status' },
  { name: 'Health Status', type: 'string', jsonPath: '.status.health.status' },
  { name: 'Revision', type: 'string', jsonPath: '.status.sync.revision', priority: 10 },
  { name: 'Project', type: 'string', jsonPath: '.spec.project', priority: 10 },
];

function builtin(init: ResourceTypeInit): ResourceTypeInit {
  return { columns: builtinColumns[init.kind] ?? [], ...init };
}

/** The resource types a fresh fake cluster serves, mirroring a kind/k3s cluster with Argo CD's CRD installed. */
export const BUILTIN_RESOURCES: ResourceTypeInit[] = [
  builtin({
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: ['status', 'finalize'],
    fieldSelectors: ['status.phase'],
    initialStatus: () => ({ phase: 'Active' }),
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    subresources: [
      'status',
      'log',
      'exec',
      'attach',
      'portforward',
      'ephemeralcontainers',
      'eviction',
      'binding',
    ],
    fieldSelectors: POD_FIELDS,
    initialStatus: () => ({ phase: 'Pending', qosClass: 'BestEffort' }),
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: ['status', 'proxy'],
    initialStatus: () => ({ loadBalancer: {} }),
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
    shortNames: ['cm'],
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'secrets',
    kind: 'Secret',
    namespaced: true,
    fieldSelectors: ['type'],
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    fieldSelectors: EVENT_FIELDS,
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
    subresources: ['token'],
  }),
  builtin({
    group: '',
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status', 'proxy'],
    fieldSelectors: ['spec.unschedulable'],
  }),
  builtin({
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    initialStatus: () => ({}),
  }),
  builtin({
    group: 'apps',
    version: 'v1',
    resource: 'replicasets',
    kind: 'ReplicaSet',
    namespaced: true,
    shortNames: ['rs'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    fieldSelectors: ['status.replicas'],
    initialStatus: () => ({ replicas: 0 }),
  }),
  builtin({
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    namespaced: true,
    shortNames: ['sts'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    initialStatus: () => ({ replicas: 0, availableReplicas: 0 }),
  }),
  builtin({
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    kind: 'DaemonSet',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    subresources: ['status'],
    initialStatus: () => ({
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
    }),
  }),
  builtin({
    group: 'batch',
    version: 'v1',
    resource: 'jobs',
    kind: 'Job',
    namespaced: true,
    categories: ['all'],
    subresources: ['status'],
    fieldSelectors: ['status.successful'],
    initialStatus: () => ({}),
  }),
  builtin({
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'networkpolicies',
    kind: 'NetworkPolicy',
    namespaced: true,
    shortNames: ['netpol'],
  }),
  ...(
    [
      ['roles', 'Role', true],
      ['rolebindings', 'RoleBinding', true],
      ['clusterroles', 'ClusterRole', false],
      ['clusterrolebindings', 'ClusterRoleBinding', false],
    ] as const
  ).map(([resource, kind, namespaced]) =>
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', resource, kind, namespaced }),
  ),
  builtin({
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    subresources: ['status'],
    columns: [{ name: 'Created At', type: 'date', cell: (o) => o.metadata.creationTimestamp ?? null }],
  }),
  {
    // Answered without storing (everything is allowed), so `kubectl auth can-i` works.
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'selfsubjectaccessreviews',
    kind: 'SelfSubjectAccessReview',
    namespaced: false,
    verbs: ['create'],
  },
  {
    group: 'argoproj.io',
    version: 'v1alpha1',
    resource: 'applications',
    kind: 'Application',
    singular: 'application',
    namespaced: true,
    shortNames: ['app', 'apps'],
    categories: [],
    strategicMergePatch: false,
    columns: crdColumns(argoApplicationColumns),
  },
];

export function createBuiltinRegistry(): ResourceRegistry {
  const registry = new ResourceRegistry();
  for (const init of BUILTIN_RESOURCES) registry.add(init);
  return registry;
}

export interface CustomResourceOptions {
  group: string;
  version: string;
  kind: string;
  /** Defaults to lower-case kind + "s". */
  plural?: string | undefined;
  singular?: string | undefined;
  namespaced?: boolean | undefined;
  shortNames?: string[] | undefined;
  categories?: string[] | undefined;
  additionalPrinterColumns?: CrdPrinterColumn[] | undefined;
  statusSubresource?: boolean | undefined;
  scaleSubresource?: boolean | undefined;
}

/** Registers a custom resource type (as if its CRD were installed). */
export function addCustomResource(registry: ResourceRegistry, opts: CustomResourceOptions): ResourceType {
  const subresources: string[] = [];
  if (opts.statusSubresource) subresources.push('status');
  if (opts.scaleSubresource) subresources.push('scale');
  return registry.add({
    group: opts.group,
    version: opts.version,
    kind: opts.kind,
    resource: opts.plural ?? `${opts.kind.toLowerCase()}s`,
    singular: opts.singular ?? opts.kind.toLowerCase(),
    namespaced: opts.namespaced ?? true,
    shortNames: opts.shortNames ?? [],
    categories: opts.categories ?? [],
    verbs: STANDARD_VERBS,
    subresources,
    strategicMergePatch: false,
    columns: crdColumns(opts.additionalPrinterColumns ?? []),
    initialStatus: opts.statusSubresource ? () => ({}) : undefined,
  });
}

/** Reads a CustomResourceDefinition object into registration options (storage version wins). */
export function customResourceFromCrd(crd: Record<string, unknown>): CustomResourceOptions | undefined {
  const spec = crd.spec as Record<string, unknown> | undefined;
  const names = spec?.names as Record<string, unknown> | undefined;
  const versions = (spec?.versions as Record<string, unknown>[] | undefined) ?? [];
  const version = versions.find((v) => v.storage === true) ?? versions.find((v) => v.served !== false);
  if (!spec || !names || !version || typeof spec.group !== 'string' || typeof names.kind !== 'string') return;
  const subresources = (version.subresources as Record<string, unknown> | undefined) ?? {};
  return {
    group: spec.group,
    version: String(version.name),
    kind: names.kind,
    plural: typeof names.plural === 'string' ? names.plural : undefined,
    singular: typeof names.singular === 'string' ? names.singular : undefined,
    namespaced: spec.scope !== 'Cluster',
    shortNames: (names.shortNames as string[] | undefined) ?? [],
    categories: (names.categories as string[] | undefined) ?? [],
    additionalPrinterColumns: (version.additionalPrinterColumns as CrdPrinterColumn[] | undefined) ?? [],
    statusSubresource: 'status' in subresources,
    scaleSubresource: 'scale' in subresources,
  };
}

/** Status the API server gives an accepted CRD; clients (and Argo CD) wait for Established. */
export function crdStatus(crd: KubeObject): Record<string, unknown> {
  const spec = isPlainObject(crd.spec) ? crd.spec : {};
  const now = kubeTimestamp();
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  return {
    acceptedNames: spec.names ?? {},
    conditions: [
      {
        type: 'NamesAccepted',
        status: 'True',
        reason: 'NoConflicts',
        message: 'no conflicts found',
        lastTransitionTime: now,
      },
      {
        type: 'Established',
        status: 'True',
        reason: 'InitialNamesAccepted',
        message: 'the initial names have been accepted',
        lastTransitionTime: now,
      },
    ],
    storedVersions: versions
      .filter((v) => isPlainObject(v) && v.storage === true)
      .map((v) => (v as { name: string }).name),
  };
}
