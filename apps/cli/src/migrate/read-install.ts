import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

/** The parts of Kubernetes objects the migration reads. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Objects from a manifest file: multi-document YAML, `kind: List` expanded. */
export function readManifests(text: string, source: string): K8sObject[] {
  const docs = parseAllDocuments(text);
  const out: K8sObject[] = [];
  const list = Array.isArray(docs) ? docs : [docs];
  for (const [i, doc] of list.entries()) {
    if (doc.errors.length > 0) {
      throw new Error(
        `${source}: document ${i + 1} is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`,
      );
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    const items =
      isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? value.items : [value];
    for (const item of items) {
      if (isObject(item) && typeof item.kind === 'string' && isObject(item.metadata))
        out.push(item as K8sObject);
    }
  }
  return out;
}

/**
 * argocd-agent's objects in a cluster: its params ConfigMaps, its Deployments and the Secrets
 * of the namespace. Secret values are not kept: the migration needs names, labels and which
 * keys exist, never the keys and certificates themselves.
 */
export async function readFromCluster(kc: KubeConfig, namespace: string): Promise<K8sObject[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const [configMaps, deployments, secrets] = await Promise.all([
    core.listNamespacedConfigMap({ namespace }),
    apps.listNamespacedDeployment({ namespace }),
    core.listNamespacedSecret({ namespace }),
  ]);
  const meta = (
    m:
      | {
          name?: string;
          namespace?: string;
          labels?: Record<string, string>;
          annotations?: Record<string, string>;
        }
      | undefined,
  ) => ({
    name: m?.name ?? '',
    namespace: m?.namespace ?? namespace,
    ...(m?.labels ? { labels: m.labels } : {}),
    ...(m?.annotations ? { annotations: m.annotations } : {}),
  });
  return [
    ...configMaps.items
      .filter((c) => c.metadata?.name === 'argocd-agent-params')
      .map((c) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(c.metadata), data: c.data ?? {} })),
    ...deployments.items
      .filter((d) => d.metadata?.name?.startsWith('argocd-agent-'))
      .map((d) => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta(d.metadata),
        spec: JSON.parse(JSON.stringify(d.spec ?? {})) as Record<string, unknown>,
      })),
    ...secrets.items.map((s) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(s.metadata),
      ...(s.type ? { type: s.type } : {}),
      // Which keys exist, not what they hold.
      data: Object.fromEntries(Object.keys(s.data ?? {}).map((k) => [k, ''])),
    })),
  ];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
