import type { ResourceRegistry, ResourceType } from './resource-registry.js';

/** A request URL resolved against the registry. */
export interface ResourceRoute {
  kind: 'resource';
  type: ResourceType;
  namespace?: string | undefined;
  name?: string | undefined;
  subresource?: string | undefined;
  /** Legacy `/watch/` path prefix was used. */
  legacyWatch: boolean;
}

export type Route =
  | ResourceRoute
  | { kind: 'unknown-resource' }
  | { kind: 'group-version'; group: string; version: string }
  | { kind: 'group'; group: string }
  | { kind: 'other' };

/**
 * Splits `/api/v1/namespaces/ns/pods/name/log` or `/apis/apps/v1/deployments` into
 * type, namespace, name and subresource, the way the API server's request-info resolver does.
 */
export function resolveRoute(registry: ResourceRegistry, pathname: string): Route {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  let group: string;
  let rest: string[];
  if (parts[0] === 'api') {
    if (parts.length < 2) return { kind: 'other' };
    group = '';
    rest = parts.slice(1);
  } else if (parts[0] === 'apis') {
    if (parts.length < 2) return { kind: 'other' };
    if (parts.length === 2) return { kind: 'group', group: parts[1]! };
    group = parts[1]!;
    rest = parts.slice(2);
  } else return { kind: 'other' };
  const version = rest[0]!;
  let segs = rest.slice(1);
  if (segs.length === 0) return { kind: 'group-version', group, version };
  let legacyWatch = false;
  if (segs[0] === 'watch') {
    legacyWatch = true;
    segs = segs.slice(1);
  }
  if (segs[0] === 'namespaces' && segs.length >= 3) {
    const type = registry.byResource(group, version, segs[2]!);
    if (type?.namespaced) {
      if (segs.length > 5) return { kind: 'unknown-resource' };
      return { kind: 'resource', type, namespace: segs[1], name: segs[3], subresource: segs[4], legacyWatch };
    }
  }
  const type = registry.byResource(group, version, segs[0]!);
  if (!type || segs.length > 3) return { kind: 'unknown-resource' };
  // `/api/v1/pods/x` does not exist: namespaced objects are only addressable under their namespace.
  if (type.namespaced && segs.length > 1) return { kind: 'unknown-resource' };
  return { kind: 'resource', type, name: segs[1], subresource: segs[2], legacyWatch };
}
