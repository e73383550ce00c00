import type { KubeObject } from './types.js';

/** One server-side printed column (`kubectl get` headers) and how to compute its cell. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string | undefined;
  description?: string | undefined;
  /** 0 = always shown; > 0 only with `-o wide`. */
  priority?: number | undefined;
  cell(obj: KubeObject, now: number): unknown;
}

export interface ResourceType {
  group: string;
  version: string;
  /** Plural resource name as it appears in URLs. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  /** Subresources served, e.g. status, scale, log, exec. */
  subresources: string[];
  /** Custom resources reject strategic-merge-patch with 415, like the real server. */
  strategicMergePatch: boolean;
  /** Field selector keys accepted besides metadata.name and metadata.namespace. */
  fieldSelectors: string[];
  /** Table columns after Name (Age included where the real server shows it). */
  columns: PrinterColumn[];
  /** Objects created through the API get this status instead of the one sent (status subresource semantics). */
  initialStatus?: (() => Record<string, unknown>) | undefined;
}

export type ResourceTypeInit = Pick<ResourceType, 'group' | 'version' | 'resource' | 'kind' | 'namespaced'> &
  Partial<ResourceType>;

export const STANDARD_VERBS = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
];

export function apiVersionOf(type: Pick<ResourceType, 'group' | 'version'>): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** Storage key for a resource type; versions share storage, as in etcd. */
export function typeKey(type: Pick<ResourceType, 'group' | 'resource'>): string {
  return `${type.group}/${type.resource}`;
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** Resource types served by one fake API server. Tests add CRDs with `add()`. */
export class ResourceRegistry {
  private readonly types: ResourceType[] = [];
  private readonly listeners = new Set<(type: ResourceType) => void>();

  add(init: ResourceTypeInit): ResourceType {
    const type: ResourceType = {
      singular: init.kind.toLowerCase(),
      shortNames: [],
      categories: [],
      verbs: STANDARD_VERBS,
      subresources: [],
      strategicMergePatch: true,
      fieldSelectors: [],
      columns: [],
      ...init,
    };
    const existing = this.types.findIndex((t) => t.group === type.group && t.resource === type.resource);
    if (existing >= 0) this.types.splice(existing, 1, type);
    else this.types.push(type);
    for (const listener of this.listeners) listener(type);
    return type;
  }

  remove(group: string, resource: string): void {
    const i = this.types.findIndex((t) => t.group === group && t.resource === resource);
    if (i >= 0) this.types.splice(i, 1);
  }

  all(): readonly ResourceType[] {
    return this.types;
  }

  byResource(group: string, version: string, resource: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.version === version && t.resource === resource);
  }

  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    const { group, version } = splitApiVersion(apiVersion);
    return this.types.find((t) => t.group === group && t.version === version && t.kind === kind);
  }

  /** Like byKind but throws a readable error; used by the test-facing store API. */
  require(apiVersion: string, kind: string): ResourceType {
    const type = this.byKind(apiVersion, kind);
    if (!type) throw new Error(`fake kube: no resource type registered for ${apiVersion} ${kind}`);
    return type;
  }

  /** Group → versions, in registration order (core group "" first when present). */
  groupVersions(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const t of this.types) {
      const versions = out.get(t.group) ?? [];
      if (!versions.includes(t.version)) versions.push(t.version);
      out.set(t.group, versions);
    }
    return out;
  }

  onAdd(listener: (type: ResourceType) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
