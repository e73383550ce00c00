import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** The YAML parser, loaded only when a params file is read (most processes have none). */
const yaml = (): typeof import('yaml') => createRequire(import.meta.url)('yaml') as typeof import('yaml');

/** Conventional name of argocd-agent's parameter ConfigMap; preferred in multi-document manifests. */
export const PARAMS_CONFIGMAP_NAME = 'argocd-agent-params';

export interface ParamsFile {
  readonly path: string;
  /** Key → raw value; empty strings are kept here and treated as unset by the loader. */
  readonly entries: ReadonlyMap<string, string>;
  readonly problems: readonly string[];
}

/**
 * Reads argocd-agent-params keys from a ConfigMap manifest, a flat (or nested) YAML map,
 * or a directory where each file is a key (a mounted ConfigMap volume).
 */
export function readParamsFile(path: string): ParamsFile {
  const entries = new Map<string, string>();
  const problems: string[] = [];
  const out = { path, entries, problems };
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(code === 'ENOENT' ? 'does not exist' : `cannot be read (${code})`);
    return out;
  }
  try {
    if (isDir) readDirectory(path, entries);
    else readYaml(readFileSync(path, 'utf8'), entries, problems);
  } catch (err) {
    problems.push(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return out;
}

function readDirectory(dir: string, entries: Map<string, string>): void {
  // Mounted ConfigMaps hold `..data` and `..<timestamp>` directories plus one symlink per key;
  // dot-names are the kubelet's bookkeeping, and stat() follows the key symlinks.
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    const file = join(dir, name);
    if (!statSync(file).isFile()) continue;
    entries.set(name, readFileSync(file, 'utf8').replace(/[\r\n]+$/, ''));
  }
}

function readYaml(text: string, entries: Map<string, string>, problems: string[]): void {
  // failsafe keeps every scalar a string as written: `1.0` stays "1.0", `0755` stays "0755".
  const docs = yaml().parseAllDocuments(text, { schema: 'failsafe' });
  if (!Array.isArray(docs)) return; // empty file: no documents
  for (const doc of docs) {
    for (const err of doc.errors) {
      // First line only: pretty errors append a source excerpt, which could hold a secret.
      problems.push(`is not valid YAML: ${(err.message.split('\n')[0] ?? '').replace(/:$/, '')}`);
    }
  }
  if (problems.length > 0) return;
  const roots = docs.map((d) => d.toJS() as unknown).filter((r) => r !== null && r !== undefined && r !== '');
  const configMaps = roots.filter((r) => isRecord(r) && r.kind === 'ConfigMap') as Record<string, unknown>[];
  if (configMaps.length > 0) {
    const chosen =
      configMaps.length === 1
        ? configMaps[0]
        : configMaps.find((cm) => isRecord(cm.metadata) && cm.metadata.name === PARAMS_CONFIGMAP_NAME);
    if (!chosen) {
      problems.push(`holds several ConfigMaps but none named ${PARAMS_CONFIGMAP_NAME}`);
      return;
    }
    const data = chosen.data ?? {};
    if (!isRecord(data)) {
      problems.push('has a ConfigMap whose data is not a map');
      return;
    }
    for (const [key, value] of Object.entries(data)) {
      if (typeof value === 'string') entries.set(key, value);
      else problems.push(`key ${key}: ConfigMap values must be strings`);
    }
    return;
  }
  if (roots.length > 1) {
    problems.push('holds several YAML documents but no ConfigMap');
    return;
  }
  const root = roots[0];
  if (root === undefined) return;
  if (!isRecord(root)) {
    problems.push('is not a YAML map of keys to values');
    return;
  }
  if (typeof root.kind === 'string' && typeof root.apiVersion === 'string') {
    problems.push(`is a ${root.kind} manifest, not a ConfigMap`);
    return;
  }
  flatten('', root, entries);
}

/** Accepts `principal: {listen: {port: 8443}}` as well as `principal.listen.port: 8443`. */
function flatten(prefix: string, node: Record<string, unknown>, entries: Map<string, string>): void {
  for (const [key, value] of Object.entries(node)) {
    const full = prefix === '' ? key : `${prefix}.${key}`;
    if (isRecord(value)) flatten(full, value, entries);
    else if (Array.isArray(value)) entries.set(full, value.map(String).join(','));
    else entries.set(full, String(value));
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
