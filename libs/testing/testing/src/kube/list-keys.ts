import { isPlainObject } from './types.js';

/**
 * Merge keys of the built-in list fields (the `patchMergeKey` tags of the Go types),
 * shared by strategic merge patch and server-side apply. Candidates are tried in order
 * because one field name means different lists: container ports key on containerPort,
 * service ports on port.
 */
const MERGE_KEYS: Record<string, string[]> = {
  containers: ['name'],
  initContainers: ['name'],
  ephemeralContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  volumeDevices: ['devicePath'],
  ports: ['containerPort', 'port'],
  imagePullSecrets: ['name'],
  hostAliases: ['ip'],
  conditions: ['type'],
  ownerReferences: ['uid'],
  topologySpreadConstraints: ['topologyKey'],
  secrets: ['name'],
  resourceClaims: ['name'],
  schedulingGates: ['name'],
  managedFields: ['manager'],
};

/** Lists of scalars merged as sets by strategic merge patch. */
export const PRIMITIVE_MERGE_LISTS = new Set(['finalizers']);

/** The merge key for a list field, or undefined when the list is atomic. */
export function mergeKeyFor(field: string, items: readonly unknown[]): string | undefined {
  const candidates = MERGE_KEYS[field];
  if (!candidates) return undefined;
  const maps = items
    .filter(isPlainObject)
    .filter((item) => item.$patch === undefined || Object.keys(item).length > 1);
  if (maps.length === 0) return candidates[0];
  return candidates.find((key) => maps.every((item) => item[key] !== undefined));
}
