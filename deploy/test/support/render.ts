import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** The deploy/ directory. */
export const DEPLOY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The repository root. */
export const REPO_ROOT = path.resolve(DEPLOY_DIR, '..');

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are untyped JSON.
  [key: string]: any;
};

const run = promisify(execFile);

/** `kubectl kustomize <dir>` (offline), parsed into objects. */
export async function render(dir: string): Promise<K8sObject[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.resolve(DEPLOY_DIR, dir)], {
    maxBuffer: 32 * 1024 * 1024,
    timeout: 20_000,
  });
  const docs = parseAllDocuments(stdout);
  if (!Array.isArray(docs)) return [];
  return docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${dir}: ${d.errors[0]?.message}`);
    return d.toJS() as K8sObject;
  });
}

export const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export function byKind(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject | undefined {
  return objects.find((o) => o.kind === kind && o.metadata.name === name);
}

export function get(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const o = find(objects, kind, name);
  if (!o) throw new Error(`no ${kind} ${name} in the rendered output`);
  return o;
}

/** Deployments and StatefulSets. */
export function workloads(objects: readonly K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
}

/** Does a label selector ({matchLabels, matchExpressions} or a plain map) select these labels? */
export function selects(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
      }
    | Record<string, string>
    | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector) return false;
  const l = labels ?? {};
  const isLabelSelector = 'matchLabels' in selector || 'matchExpressions' in selector;
  const matchLabels = (
    isLabelSelector ? (selector as { matchLabels?: Record<string, string> }).matchLabels : selector
  ) as Record<string, string> | undefined;
  for (const [k, v] of Object.entries(matchLabels ?? {})) if (l[k] !== v) return false;
  const exprs = isLabelSelector
    ? ((selector as { matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> })
        .matchExpressions ?? [])
    : [];
  for (const e of exprs) {
    const has = e.key in l;
    const inValues = has && (e.values ?? []).includes(l[e.key]!);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** Resolves a Service targetPort / probe port / Linkerd Server port (number or name) on a pod. */
export function containerPort(pod: K8sObject['spec'], port: number | string): number | undefined {
  for (const c of pod.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (typeof port === 'number' ? p.containerPort === port : p.name === port) return p.containerPort;
    }
  }
  return undefined;
}
