import type { PrinterColumn } from './resource-registry.js';
import { isPlainObject, type KubeObject } from './types.js';

/** k8s.io/apimachinery duration.HumanDuration, which kubectl's AGE column uses. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (days < 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${d}d`;
  }
  return `${Math.floor(days / 365)}y`;
}

export function ageOf(timestamp: unknown, now: number): string {
  if (typeof timestamp !== 'string') return '<unknown>';
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

/** Reads `.a.b.c` (the subset of JSONPath CRD printer columns use in practice). */
export function readPath(obj: unknown, path: string): unknown {
  // The JSONPath subset CRDs' printer columns use: .field, [index] and [?(@.field=="value")]
  // (the first match, which is what a column shows for a single match).
  const step = /\.([^.[\]]+)|\[(\d+)\]|\[\?\(@\.([^=)\s]+)\s*==\s*["']([^"']*)["']\)\]/y;
  let cur: unknown = obj;
  let at = 0;
  const p = path.startsWith('.') || path.startsWith('[') ? path : `.${path}`;
  while (at < p.length) {
    step.lastIndex = at;
    const m = step.exec(p);
    if (!m) return undefined;
    at = step.lastIndex;
    if (m[1] !== undefined) cur = isPlainObject(cur) ? cur[m[1]] : undefined;
    else if (m[2] !== undefined) cur = Array.isArray(cur) ? cur[Number(m[2])] : undefined;
    else
      cur = Array.isArray(cur) ? cur.find((e) => isPlainObject(e) && String(e[m[3]!]) === m[4]) : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

const obj = (v: unknown): Record<string, unknown> => (isPlainObject(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const str = (v: unknown, fallback = '<none>'): string =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : fallback;

export const ageColumn: PrinterColumn = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: (o, now) => ageOf(o.metadata.creationTimestamp, now),
};

function containersCol(path: (o: KubeObject) => unknown): PrinterColumn[] {
  const containers = (o: KubeObject) => arr(obj(path(o)).containers).map(obj);
  return [
    {
      name: 'Containers',
      type: 'string',
      priority: 1,
      description: 'Names of each container in the template.',
      cell: (o) =>
        containers(o)
          .map((c) => str(c.name, ''))
          .join(','),
    },
    {
      name: 'Images',
      type: 'string',
      priority: 1,
      description: 'Images referenced by each container in the template.',
      cell: (o) =>
        containers(o)
          .map((c) => str(c.image, ''))
          .join(','),
    },
  ];
}

function selectorString(selector: unknown): string {
  const labels = obj(obj(selector).matchLabels);
  const parts = Object.entries(labels).map(([k, v]) => `${k}=${String(v)}`);
  return parts.length ? parts.join(',') : '<none>';
}

const podTemplate = (o: KubeObject) => obj(obj(obj(o.spec).template).spec);

function podStatusReason(pod: KubeObject): string {
  if (pod.metadata.deletionTimestamp) return 'Terminating';
  const status = obj(pod.status);
  let reason = str(status.reason, '') || str(status.phase, 'Unknown');
  for (const cs of arr(status.containerStatuses).map(obj)) {
    const state = obj(cs.state);
    const waiting = obj(state.waiting);
    const terminated = obj(state.terminated);
    if (typeof waiting.reason === 'string' && waiting.reason) reason = waiting.reason;
    else if (typeof terminated.reason === 'string' && terminated.reason) reason = terminated.reason;
  }
  return reason;
}

export const builtinColumns: Record<string, PrinterColumn[]> = {
  Pod: [
    {
      name: 'Ready',
      type: 'string',
      description: 'The aggregate readiness state of this pod for accepting traffic.',
      cell: (o) => {
        const statuses = arr(obj(o.status).containerStatuses).map(obj);
        const total = arr(obj(o.spec).containers).length;
        return `${statuses.filter((s) => s.ready === true).length}/${total}`;
      },
    },
    {
      name: 'Status',
      type: 'string',
      description: 'The aggregate status of the containers in this pod.',
      cell: podStatusReason,
    },
    {
      name: 'Restarts',
      type: 'string',
      description: 'The number of times the containers in this pod have been restarted.',
      cell: (o) =>
        String(
          arr(obj(o.status).containerStatuses).reduce((n: number, s) => n + num(obj(s).restartCount), 0),
        ),
    },
    ageColumn,
    { name: 'IP', type: 'string', priority: 1, cell: (o) => str(obj(o.status).podIP) },
    { name: 'Node', type: 'string', priority: 1, cell: (o) => str(obj(o.spec).nodeName) },
    {
      name: 'Nominated Node',
      type: 'string',
      priority: 1,
      cell: (o) => str(obj(o.status).nominatedNodeName),
    },
    { name: 'Readiness Gates', type: 'string', priority: 1, cell: () => '<none>' },
  ],
  Deployment: [
    {
      name: 'Ready',
      type: 'string',
      description: 'Number of the pod with ready state',
      cell: (o) => `${num(obj(o.status).readyReplicas)}/${num(obj(o.spec).replicas ?? 1)}`,
    },
    {
      name: 'Up-to-date',
      type: 'integer',
      description:
        'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
      cell: (o) => num(obj(o.status).updatedReplicas),
    },
    {
      name: 'Available',
      type: 'integer',
      description:
        'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
      cell: (o) => num(obj(o.status).availableReplicas),
    },
    ageColumn,
    ...containersCol(podTemplate),
    { name: 'Selector', type: 'string', priority: 1, cell: (o) => selectorString(obj(o.spec).selector) },
  ],
  ReplicaSet: [
    { name: 'Desired', type: 'integer', cell: (o) => num(obj(o.spec).replicas) },
    { name: 'Current', type: 'integer', cell: (o) => num(obj(o.status).replicas) },
    { name: 'Ready', type: 'integer', cell: (o) => num(obj(o.status).readyReplicas) },
    ageColumn,
    ...containersCol(podTemplate),
    { name: 'Selector', type: 'string', priority: 1, cell: (o) => selectorString(obj(o.spec).selector) },
  ],
  StatefulSet: [
    {
      name: 'Ready',
      type: 'string',
      cell: (o) => `${num(obj(o.status).readyReplicas)}/${num(obj(o.spec).replicas ?? 1)}`,
    },
    ageColumn,
    ...containersCol(podTemplate),
  ],
  DaemonSet: [
    { name: 'Desired', type: 'integer', cell: (o) => num(obj(o.status).desiredNumberScheduled) },
    { name: 'Current', type: 'integer', cell: (o) => num(obj(o.status).currentNumberScheduled) },
    { name: 'Ready', type: 'integer', cell: (o) => num(obj(o.status).numberReady) },
    { name: 'Up-to-date', type: 'integer', cell: (o) => num(obj(o.status).updatedNumberScheduled) },
    { name: 'Available', type: 'integer', cell: (o) => num(obj(o.status).numberAvailable) },
    {
      name: 'Node Selector',
      type: 'string',
      cell: (o) =>
        Object.entries(obj(podTemplate(o).nodeSelector))
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(',') || '<none>',
    },
    ageColumn,
    ...containersCol(podTemplate),
  ],
  Job: [
    {
      name: 'Status',
      type: 'string',
      cell: (o) => {
        const conds = arr(obj(o.status).conditions).map(obj);
        const done = conds.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
        return done ? str(done.type) : 'Running';
      },
    },
    {
      name: 'Completions',
      type: 'string',
      cell: (o) => `${num(obj(o.status).succeeded)}/${num(obj(o.spec).completions ?? 1)}`,
    },
    {
      name: 'Duration',
      type: 'string',
      cell: (o, now) => {
        const status = obj(o.status);
        if (typeof status.startTime !== 'string') return '';
        const end = typeof status.completionTime === 'string' ? Date.parse(status.completionTime) : now;
        return humanDuration(end - Date.parse(status.startTime));
      },
    },
    ageColumn,
  ],
  Service: [
    { name: 'Type', type: 'string', cell: (o) => str(obj(o.spec).type, 'ClusterIP') },
    { name: 'Cluster-IP', type: 'string', cell: (o) => str(obj(o.spec).clusterIP) },
    {
      name: 'External-IP',
      type: 'string',
      cell: (o) => {
        const ingress = arr(obj(obj(o.status).loadBalancer).ingress).map(obj);
        const ips = [
          ...arr(obj(o.spec).externalIPs).map(String),
          ...ingress.map((i) => str(i.ip ?? i.hostname)),
        ];
        return ips.length ? ips.join(',') : '<none>';
      },
    },
    {
      name: 'Port(s)',
      type: 'string',
      cell: (o) =>
        arr(obj(o.spec).ports)
          .map(obj)
          .map((p) => `${num(p.port)}${p.nodePort ? `:${num(p.nodePort)}` : ''}/${str(p.protocol, 'TCP')}`)
          .join(',') || '<none>',
    },
    ageColumn,
    {
      name: 'Selector',
      type: 'string',
      priority: 1,
      cell: (o) =>
        Object.entries(obj(obj(o.spec).selector))
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(',') || '<none>',
    },
  ],
  ConfigMap: [
    {
      name: 'Data',
      type: 'integer',
      cell: (o) => Object.keys(obj(o.data)).length + Object.keys(obj(o.binaryData)).length,
    },
    ageColumn,
  ],
  Secret: [
    { name: 'Type', type: 'string', cell: (o) => str(o.type, 'Opaque') },
    { name: 'Data', type: 'integer', cell: (o) => Object.keys(obj(o.data)).length },
    ageColumn,
  ],
  Namespace: [{ name: 'Status', type: 'string', cell: (o) => str(obj(o.status).phase, 'Active') }, ageColumn],
  Node: [
    {
      name: 'Status',
      type: 'string',
      cell: (o) => {
        const ready = arr(obj(o.status).conditions)
          .map(obj)
          .find((c) => c.type === 'Ready');
        return ready?.status === 'True' ? 'Ready' : 'NotReady';
      },
    },
    {
      name: 'Roles',
      type: 'string',
      cell: (o) =>
        Object.keys(o.metadata.labels ?? {})
          .filter((k) => k.startsWith('node-role.kubernetes.io/'))
          .map((k) => k.slice('node-role.kubernetes.io/'.length))
          .join(',') || '<none>',
    },
    ageColumn,
    { name: 'Version', type: 'string', cell: (o) => str(obj(obj(o.status).nodeInfo).kubeletVersion, '') },
  ],
  ServiceAccount: [{ name: 'Secrets', type: 'integer', cell: (o) => arr(o.secrets).length }, ageColumn],
  Event: [
    {
      name: 'Last Seen',
      type: 'string',
      cell: (o, now) => ageOf(o.lastTimestamp ?? o.eventTime ?? o.metadata.creationTimestamp, now),
    },
    { name: 'Type', type: 'string', cell: (o) => str(o.type, '') },
    { name: 'Reason', type: 'string', cell: (o) => str(o.reason, '') },
    {
      name: 'Object',
      type: 'string',
      cell: (o) => {
        const io = obj(o.involvedObject);
        return `${str(io.kind, '').toLowerCase()}/${str(io.name, '')}`;
      },
    },
    { name: 'Message', type: 'string', cell: (o) => str(o.message, '') },
  ],
};

export interface CrdPrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  priority?: number | undefined;
  description?: string | undefined;
  format?: string | undefined;
}

/** additionalPrinterColumns of a CRD; Age is appended like the real server does. */
export function crdColumns(columns: CrdPrinterColumn[]): PrinterColumn[] {
  const out: PrinterColumn[] = columns.map((c) => ({
    name: c.name,
    type: (['string', 'integer', 'number', 'boolean', 'date'].includes(c.type)
      ? c.type
      : 'string') as PrinterColumn['type'],
    priority: c.priority ?? 0,
    description: c.description,
    format: c.format,
    cell: (o: KubeObject, now: number) => {
      const v = readPath(o, c.jsonPath);
      if (c.type === 'date') return ageOf(v, now);
      return v === undefined ? null : v;
    },
  }));
  if (!columns.some((c) => c.jsonPath === '.metadata.creationTimestamp')) out.push(ageColumn);
  return out;
}
