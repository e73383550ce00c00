// NetworkPolicy evaluation as the Kubernetes API documents it: a pod selected by no policy of a
// direction allows everything in that direction; otherwise a connection is allowed when some
// rule of some selecting policy admits the peer (podSelector: pods of the policy's namespace;
// namespaceSelector (+ podSelector): pods of matching namespaces; ipBlock: addresses outside the
// cluster) on the port (number, or a name resolved on the destination pod; no ports: all).
// Both ends count: the source pod's egress and the destination pod's ingress.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEPLOY_DIR, type K8sObject, selects, workloads } from './render.js';

/** Argo CD's pods, Services and policies around the bundles (test/fixtures/cluster). */
export const CLUSTER: K8sObject[] = parseAllDocuments(
  readFileSync(path.join(DEPLOY_DIR, 'test/fixtures/cluster/argocd.yaml'), 'utf8'),
)
  .map((d) => d.toJS() as K8sObject)
  .filter(Boolean);

export interface Pod {
  /** Workload or Pod name, for messages. */
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ports: Array<{ name?: string; containerPort: number }>;
  /** A Redis started with `--requirepass $(VAR)`: the Secret key VAR comes from. */
  requiresPassword?: { name: string; key: string };
}

/** Something outside the cluster's pod network: another cluster, a load balancer, the API server. */
export interface External {
  external: string;
}

export type Peer = Pod | External;
export const isExternal = (p: Peer): p is External => 'external' in p;

type Selector = Parameters<typeof selects>[0];
interface PolicyPeer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: { cidr: string; except?: string[] };
}
interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}
interface Rule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: PolicyPort[];
}

/** The pods of the rendered workloads and of the Pod stand-ins of the environment. */
export function podsOf(objects: readonly K8sObject[]): Pod[] {
  const fromSpec = (
    name: string,
    namespace: string | undefined,
    meta: K8sObject['metadata'],
    spec: K8sObject['spec'],
  ) => ({
    name,
    namespace: namespace ?? 'default',
    labels: meta.labels ?? {},
    ports: (spec.containers ?? []).flatMap((c: { ports?: Pod['ports'] }) => c.ports ?? []),
  });
  const password = (spec: K8sObject['spec']) => {
    for (const c of spec.containers ?? []) {
      const args: string = [...(c.command ?? []), ...(c.args ?? [])].join(' ');
      const v = /--requirepass\s+\$\(([A-Za-z_][A-Za-z0-9_]*)\)/.exec(args)?.[1];
      const ref = (c.env ?? []).find((e: { name: string }) => e.name === v)?.valueFrom?.secretKeyRef;
      if (ref) return { name: ref.name as string, key: ref.key as string };
    }
    return undefined;
  };
  const withPassword = (p: Pod, spec: K8sObject['spec']) => {
    const required = password(spec);
    return required ? { ...p, requiresPassword: required } : p;
  };
  return [
    ...workloads(objects).map((w) =>
      withPassword(
        fromSpec(w.metadata.name, w.metadata.namespace, w.spec.template.metadata, w.spec.template.spec),
        w.spec.template.spec,
      ),
    ),
    ...objects
      .filter((o) => o.kind === 'Pod')
      .map((p) => withPassword(fromSpec(p.metadata.name, p.metadata.namespace, p.metadata, p.spec), p.spec)),
  ];
}

const namespaceLabels = (ns: string) => ({ 'kubernetes.io/metadata.name': ns });

function policyTypes(np: K8sObject): string[] {
  if (np.spec.policyTypes) return np.spec.policyTypes;
  return np.spec.egress ? ['Ingress', 'Egress'] : ['Ingress'];
}

function peerMatches(peer: PolicyPeer, policyNs: string, p: Peer): boolean {
  if (peer.ipBlock) {
    // Only what leaves the pod network is matched by address here; the test cannot know pod IPs.
    return isExternal(p) && peer.ipBlock.cidr === '0.0.0.0/0' && !(peer.ipBlock.except ?? []).length;
  }
  if (isExternal(p)) return false;
  if (peer.namespaceSelector) {
    if (!selects(peer.namespaceSelector, namespaceLabels(p.namespace)) && !isEmpty(peer.namespaceSelector))
      return false;
  } else if (p.namespace !== policyNs) return false;
  return peer.podSelector === undefined || isEmpty(peer.podSelector) || selects(peer.podSelector, p.labels);
}

const isEmpty = (s: Selector) => {
  const o = (s ?? {}) as { matchLabels?: object; matchExpressions?: unknown[] };
  return Object.keys(o.matchLabels ?? {}).length === 0 && (o.matchExpressions ?? []).length === 0;
};

function portMatches(ports: PolicyPort[] | undefined, port: number, destination: Peer): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((pp) => {
    if ((pp.protocol ?? 'TCP') !== 'TCP') return false;
    if (pp.port === undefined) return true;
    if (typeof pp.port === 'string') {
      if (isExternal(destination)) return false;
      return destination.ports.some((cp) => cp.name === pp.port && cp.containerPort === port);
    }
    return pp.endPort !== undefined ? port >= pp.port && port <= pp.endPort : port === pp.port;
  });
}

/** Is a connection from `source` to `destination`:`port` allowed by both ends' policies? */
export function allowed(
  policies: readonly K8sObject[],
  source: Peer,
  destination: Peer,
  port: number,
): { ok: true } | { ok: false; why: string } {
  const selecting = (p: Peer, type: string) =>
    isExternal(p)
      ? []
      : policies.filter(
          (np) =>
            (np.metadata.namespace ?? 'default') === p.namespace &&
            policyTypes(np).includes(type) &&
            (isEmpty(np.spec.podSelector) || selects(np.spec.podSelector, p.labels)),
        );
  const why: string[] = [];
  const egress = selecting(source, 'Egress');
  if (
    egress.length > 0 &&
    !egress.some((np) =>
      ((np.spec.egress ?? []) as Rule[]).some(
        (rule) =>
          portMatches(rule.ports, port, destination) &&
          (!rule.to ||
            rule.to.some((peer) => peerMatches(peer, np.metadata.namespace ?? 'default', destination))),
      ),
    )
  )
    why.push(`no egress rule of ${egress.map((np) => np.metadata.name).join(', ')} admits it`);
  const ingress = selecting(destination, 'Ingress');
  if (
    ingress.length > 0 &&
    !ingress.some((np) =>
      ((np.spec.ingress ?? []) as Rule[]).some(
        (rule) =>
          portMatches(rule.ports, port, destination) &&
          (!rule.from ||
            rule.from.some((peer) => peerMatches(peer, np.metadata.namespace ?? 'default', source))),
      ),
    )
  )
    why.push(`no ingress rule of ${ingress.map((np) => np.metadata.name).join(', ')} admits it`);
  return why.length === 0 ? { ok: true } : { ok: false, why: why.join('; ') };
}

export interface Destination {
  /** The pods behind the address (empty: outside the cluster). */
  pods: Pod[];
  /** The port the pods listen on (a Service's targetPort), or the port dialled outside. */
  ports: number[];
  /** How the address was resolved, for messages. */
  via: string;
}

/**
 * Where a dial to `host:port` from `namespace` lands: a Service of the rendered objects or the
 * environment (by `name`, `name.ns`, `name.ns.svc[.cluster.local]`), the pods it selects and
 * their target port; the Kubernetes API (its endpoints listen on 443 or, often, 6443); or
 * outside the cluster.
 */
export function resolve(
  objects: readonly K8sObject[],
  pods: readonly Pod[],
  host: string,
  port: number,
  namespace: string,
): Destination {
  const parts = host.replace(/\.$/, '').split('.');
  const inCluster =
    parts.length === 1 ||
    parts.length === 2 ||
    (parts[2] === 'svc' && (parts.length === 3 || parts.slice(3).join('.') === 'cluster.local'));
  if (inCluster) {
    const [name, ns = namespace] = parts;
    if (name === 'kubernetes' && ns === 'default')
      return { pods: [], ports: [443, 6443], via: 'the Kubernetes API' };
    const svc = objects.find(
      (o) => o.kind === 'Service' && o.metadata.name === name && (o.metadata.namespace ?? namespace) === ns,
    );
    if (svc) {
      const sp = (svc.spec.ports ?? []).find((p: { port: number }) => p.port === port);
      if (!sp) return { pods: [], ports: [], via: `Service ${ns}/${name} (no port ${port})` };
      const selected = pods.filter((p) => p.namespace === ns && selects(svc.spec.selector, p.labels));
      const target = sp.targetPort ?? sp.port;
      const targets = selected.map((p) =>
        typeof target === 'number' ? target : p.ports.find((cp) => cp.name === target)?.containerPort,
      );
      return {
        pods: selected,
        ports: [...new Set(targets.filter((t): t is number => t !== undefined))],
        via: `Service ${ns}/${name}`,
      };
    }
  }
  // Another cluster's Service reached through a mesh, a load balancer, a host outside: the pod's
  // own policies decide; nothing of the destination's is known here.
  return { pods: [], ports: [port], via: `${host} (outside this cluster)` };
}
