import { apiVersionOf, type ResourceRegistry, type ResourceType } from './resource-registry.js';

/**
 * Discovery documents: the legacy per-group-version lists and the aggregated
 * `apidiscovery.k8s.io/v2` form kubectl asks for first (one request for everything).
 */

const SUBRESOURCE_VERBS: Record<string, string[]> = {
  status: ['get', 'patch', 'update'],
  scale: ['get', 'patch', 'update'],
  log: ['get'],
  exec: ['create', 'get'],
  attach: ['create', 'get'],
  portforward: ['create', 'get'],
  proxy: ['create', 'delete', 'get', 'patch', 'update'],
  eviction: ['create'],
  binding: ['create'],
  ephemeralcontainers: ['get', 'patch', 'update'],
  token: ['create'],
  finalize: ['update'],
};

function subresourceKind(type: ResourceType, sub: string): { group: string; version: string; kind: string } {
  switch (sub) {
    case 'scale':
      return { group: 'autoscaling', version: 'v1', kind: 'Scale' };
    case 'log':
    case 'exec':
    case 'attach':
    case 'portforward':
    case 'proxy':
      return { group: '', version: '', kind: sub === 'log' ? 'Pod' : `${type.kind}${cap(sub)}Options` };
    case 'eviction':
      return { group: 'policy', version: 'v1', kind: 'Eviction' };
    case 'binding':
      return { group: '', version: 'v1', kind: 'Binding' };
    case 'token':
      return { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' };
    default:
      return { group: type.group, version: type.version, kind: type.kind };
  }
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function typesOf(registry: ResourceRegistry, group: string, version: string): ResourceType[] {
  return registry.all().filter((t) => t.group === group && t.version === version);
}

export function versionInfo(gitVersion: string) {
  const m = /^v(\d+)\.(\d+)/.exec(gitVersion);
  return {
    major: m?.[1] ?? '1',
    minor: m?.[2] ?? '30',
    gitVersion,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2024-08-14T00:00:00Z',
    goVersion: 'go1.22.5',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

export function apiVersions(serverAddress: string) {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(name: string, versions: string[]) {
  const list = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: list, preferredVersion: list[0] };
}

export function apiGroupList(registry: ResourceRegistry) {
  const groups = [...registry.groupVersions()].filter(([g]) => g !== '').map(([g, vs]) => apiGroup(g, vs));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroupDoc(registry: ResourceRegistry, group: string) {
  const versions = registry.groupVersions().get(group);
  return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(group, versions) } : undefined;
}

export function apiResourceList(registry: ResourceRegistry, group: string, version: string) {
  const types = typesOf(registry, group, version);
  if (types.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const t of types) {
    const main: Record<string, unknown> = {
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: t.verbs,
    };
    if (t.shortNames.length) main.shortNames = t.shortNames;
    if (t.categories.length) main.categories = t.categories;
    resources.push(main);
    for (const sub of t.subresources) {
      const k = subresourceKind(t, sub);
      const entry: Record<string, unknown> = {
        name: `${t.resource}/${sub}`,
        singularName: '',
        namespaced: t.namespaced,
        kind: k.kind,
        verbs: SUBRESOURCE_VERBS[sub] ?? ['get'],
      };
      if (k.group !== t.group) entry.group = k.group;
      if (k.version !== t.version && k.version) entry.version = k.version;
      resources.push(entry);
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf({ group, version }),
    resources,
  };
}

function discoveryResource(t: ResourceType) {
  const out: Record<string, unknown> = {
    resource: t.resource,
    responseKind: { group: t.group, version: t.version, kind: t.kind },
    scope: t.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: t.singular,
    verbs: t.verbs,
  };
  if (t.shortNames.length) out.shortNames = t.shortNames;
  if (t.categories.length) out.categories = t.categories;
  if (t.subresources.length) {
    out.subresources = t.subresources.map((sub) => ({
      subresource: sub,
      responseKind: subresourceKind(t, sub),
      verbs: SUBRESOURCE_VERBS[sub] ?? ['get'],
    }));
  }
  return out;
}

export const AGGREGATED_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** Aggregated discovery for `/api` (core: true) or `/apis`. */
export function aggregatedDiscovery(registry: ResourceRegistry, core: boolean, apiVersion: string) {
  const items = [...registry.groupVersions()]
    .filter(([g]) => (core ? g === '' : g !== ''))
    .map(([group, versions]) => ({
      metadata: group ? { name: group, creationTimestamp: null } : { creationTimestamp: null },
      versions: versions.map((version) => ({
        version,
        resources: typesOf(registry, group, version).map(discoveryResource),
        freshness: 'Current',
      })),
    }));
  return { kind: 'APIGroupDiscoveryList', apiVersion, metadata: {}, items };
}
