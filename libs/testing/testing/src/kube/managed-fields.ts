import {
  applyMerge,
  collectPaths,
  deleteAtPath,
  type FieldPath,
  formatPath,
  fromFieldsV1,
  getAtPath,
  NOT_FOUND,
  parsePathKey,
  pathKey,
  toFieldsV1,
} from './field-set.js';
import { StatusError } from './status.js';
import { deepEqual, type KubeObject, kubeTimestamp, type ManagedFieldsEntry } from './types.js';

/**
 * Field ownership as the API server records it in `metadata.managedFields`: every write
 * is attributed to a field manager; server-side apply detects conflicts with other
 * managers and removes fields its manager stopped applying.
 */

interface Manager {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string | undefined;
  paths: Set<string>;
}

function readManagers(obj: KubeObject | undefined): Manager[] {
  return (obj?.metadata.managedFields ?? []).map((entry) => ({
    manager: entry.manager,
    operation: entry.operation,
    apiVersion: entry.apiVersion,
    time: entry.time ?? kubeTimestamp(),
    subresource: entry.subresource,
    paths: fromFieldsV1(entry.fieldsV1),
  }));
}

function writeManagers(obj: KubeObject, managers: Manager[]): void {
  // Ownership of fields that no longer exist is dropped, as the server does.
  for (const m of managers) {
    for (const key of [...m.paths]) if (getAtPath(obj, parsePathKey(key)) === NOT_FOUND) m.paths.delete(key);
  }
  const entries: ManagedFieldsEntry[] = managers
    .filter((m) => m.paths.size > 0)
    .map((m) => {
      const entry: ManagedFieldsEntry = {
        manager: m.manager,
        operation: m.operation,
        apiVersion: m.apiVersion,
        time: m.time,
        fieldsType: 'FieldsV1',
        fieldsV1: toFieldsV1([...m.paths].sort()),
      };
      if (m.subresource) entry.subresource = m.subresource;
      return entry;
    });
  if (entries.length > 0) obj.metadata.managedFields = entries;
  else delete obj.metadata.managedFields;
}

const isItemPath = (path: FieldPath) => path[path.length - 1]?.startsWith('k:') ?? false;

/** A prefix test on encoded paths: does `inner` lie below (or equal) `outer`? */
function isWithin(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(`${outer.slice(0, -1)},`);
}

export interface ApplyOptions {
  manager: string;
  force: boolean;
  apiVersion: string;
  subresource?: string | undefined;
}

/**
 * Server-side apply of `applied` onto `live` (undefined = create). Returns the merged
 * object with managedFields updated, or throws a 409 Conflict listing the contested fields.
 */
export function serverSideApply(
  live: KubeObject | undefined,
  applied: KubeObject,
  opts: ApplyOptions,
): KubeObject {
  const managers = readManagers(live);
  const appliedPaths = collectPaths(applied);
  const appliedKeys = new Set(appliedPaths.map(pathKey));

  const conflicts: { manager: Manager; path: FieldPath }[] = [];
  for (const m of managers) {
    // A manager is name + operation: kubectl's own Update entry (e.g. from `kubectl scale`) can conflict with its Apply.
    if (m.manager === opts.manager && m.operation === 'Apply') continue;
    for (const path of appliedPaths) {
      if (isItemPath(path) || !m.paths.has(pathKey(path))) continue;
      if (!deepEqual(getAtPath(live, path), getAtPath(applied, path))) conflicts.push({ manager: m, path });
    }
  }
  if (conflicts.length > 0 && !opts.force) {
    const lines = conflicts.map(
      (c) => `conflict with "${c.manager.manager}"${usingSuffix(c.manager)}: ${formatPath(c.path)}`,
    );
    const message =
      conflicts.length === 1
        ? `Apply failed with 1 conflict: ${lines[0]}`
        : `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
    throw new StatusError(409, 'Conflict', message, {
      causes: conflicts.map((c) => ({
        type: 'FieldManagerConflict',
        message: `conflict with "${c.manager.manager}"${usingSuffix(c.manager)}`,
        field: formatPath(c.path),
      })),
    });
  }
  for (const c of conflicts) c.manager.paths.delete(pathKey(c.path));

  const result = structuredClone(
    live ?? ({ apiVersion: applied.apiVersion, kind: applied.kind, metadata: {} } as KubeObject),
  );
  const previous = managers.find((m) => m.manager === opts.manager && m.operation === 'Apply');
  if (previous) {
    const dropped = [...previous.paths].filter((key) => !appliedKeys.has(key));
    // Deepest first, so list items go after their fields; fields still owned by anyone else stay.
    dropped.sort((a, b) => b.length - a.length);
    for (const key of dropped) {
      const ownedElsewhere = managers.some(
        (m) => m !== previous && [...m.paths].some((other) => isWithin(other, key)),
      );
      const stillApplied = [...appliedKeys].some((other) => isWithin(other, key));
      if (!ownedElsewhere && !stillApplied) deleteAtPath(result, parsePathKey(key));
    }
  }
  const merged = applyMerge(result, applied) as KubeObject;
  merged.metadata.managedFields = live?.metadata.managedFields;

  const entry: Manager = previous ?? {
    manager: opts.manager,
    operation: 'Apply',
    apiVersion: opts.apiVersion,
    time: '',
    paths: new Set(),
  };
  entry.paths = appliedKeys;
  entry.apiVersion = opts.apiVersion;
  entry.time = kubeTimestamp();
  if (opts.subresource) entry.subresource = opts.subresource;
  const all = previous ? managers : [...managers, entry];
  writeManagers(merged, all);
  return merged;
}

function usingSuffix(m: Manager): string {
  return m.operation === 'Update' ? ` using ${m.apiVersion}` : '';
}

export interface UpdateOptions {
  manager: string;
  apiVersion: string;
  subresource?: string | undefined;
}

/**
 * Records a non-apply write (create, update, patch) in managedFields: fields whose value
 * changed move to `manager` with operation Update. A request that sends its own
 * managedFields (e.g. kubectl's client-side-apply migration) is taken as is.
 */
export function recordUpdate(
  prev: KubeObject | undefined,
  next: KubeObject,
  opts: UpdateOptions,
): KubeObject {
  const sent = next.metadata.managedFields;
  const explicit = sent !== undefined && !deepEqual(sent, prev?.metadata.managedFields);
  const managers = explicit ? readManagers(next) : readManagers(prev);
  if (!explicit) {
    const changed = collectPaths(next)
      .filter((path) => {
        const before = getAtPath(prev, path);
        return isItemPath(path) ? before === NOT_FOUND : !deepEqual(before, getAtPath(next, path));
      })
      .map(pathKey);
    if (changed.length > 0) {
      for (const m of managers) for (const key of changed) m.paths.delete(key);
      let entry = managers.find(
        (m) => m.manager === opts.manager && m.operation === 'Update' && m.subresource === opts.subresource,
      );
      if (!entry) {
        entry = {
          manager: opts.manager,
          operation: 'Update',
          apiVersion: opts.apiVersion,
          time: '',
          paths: new Set(),
        };
        if (opts.subresource) entry.subresource = opts.subresource;
        managers.push(entry);
      }
      for (const key of changed) entry.paths.add(key);
      entry.time = kubeTimestamp();
      entry.apiVersion = opts.apiVersion;
    }
  }
  const out = structuredClone(next);
  writeManagers(out, managers);
  return out;
}
