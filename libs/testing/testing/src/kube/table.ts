import type { ResourceType } from './resource-registry.js';
import type { KubeObject } from './types.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export interface TableListMeta {
  resourceVersion: string;
  continue?: string | undefined;
  remainingItemCount?: number | undefined;
}

const NAME_COLUMN = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description:
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically.',
  priority: 0,
};

export function columnDefinitions(type: ResourceType) {
  return [
    NAME_COLUMN,
    ...type.columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description ?? c.name,
      priority: c.priority ?? 0,
    })),
  ];
}

function rowObject(obj: KubeObject, include: IncludeObject): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/**
 * A `meta.k8s.io/v1` Table, what kubectl asks for with `Accept: …;as=Table;…`. Watch
 * events carry one-row tables without column definitions after the first, as the real server does.
 */
export function toTable(
  type: ResourceType,
  objects: readonly KubeObject[],
  include: IncludeObject,
  listMeta: TableListMeta,
  withColumns = true,
) {
  const now = Date.now();
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: withColumns ? columnDefinitions(type) : [],
    rows: objects.map((obj) => {
      const row: { cells: unknown[]; object?: unknown } = {
        cells: [obj.metadata.name ?? '', ...type.columns.map((c) => c.cell(obj, now))],
      };
      const object = rowObject(obj, include);
      if (object !== undefined) row.object = object;
      return row;
    }),
  };
}

export function parseIncludeObject(value: string | null): IncludeObject {
  return value === 'None' || value === 'Object' ? value : 'Metadata';
}
