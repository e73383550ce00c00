// What a pullplane container will read and dial, derived from its loaded configuration and its
// app's option table (not from a list kept here, so a new flag is covered when it appears), and
// whether the bundle provides it: every file from a Secret/ConfigMap key the bundle renders or
// the install guide tells the operator to create, every Secret the pods mount listed in that
// guide, every address admitted by NetworkPolicies at both ends, every listener open to its
// callers and to nobody else.
//
// Hook for other configuration sources (a ClusterAgent resource the agent reads its settings
// from): give `containerConfig` the values as the app merges them, and add the Secrets such a
// resource references to `secretsNeeded` below, so they are held to the install guide too.
import path from 'node:path';
import type { OptionDef } from '@pullplane/config';
import type { ContainerConfig, Credential, Listener } from './apps.js';
import type { GuideObject } from './install-guide.js';
import { allowed, type Destination, type External, type Peer, type Pod, resolve } from './network.js';
import { find, type K8sObject } from './render.js';

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are untyped JSON.
type Json = any;

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A file the container will read, the option that names it, and whether the app needs it to exist. */
export interface FileRead {
  option: string;
  /** The path in the pod. */
  path: string;
  /** false: read only when its feature is on (the app's own validation checks it then). */
  mustExist: boolean;
  directory: boolean;
}

/** Options that take a path: `file` options, and strings named `…-path` (watched files that may appear later). */
const isPathOption = (o: OptionDef) => o.type === 'file' || (o.type === 'string' && /-path$/.test(o.flag));

/** The files a container reads: its path options as configured, `token:<file>` credentials, its params file. */
export function fileReads(c: ContainerConfig): FileRead[] {
  const inPod = (p: string) => (p.startsWith(`${c.root}/`) ? p.slice(c.root.length) : p);
  const reads: FileRead[] = [];
  for (const o of c.spec.options ?? []) {
    const value = c.config[camel(o.flag)];
    if (isPathOption(o) && typeof value === 'string' && value !== '') {
      reads.push({
        option: `--${o.flag}`,
        path: inPod(value),
        mustExist: o.type === 'file' ? o.mustExist !== false : false,
        directory: o.type === 'file' && o.kind === 'directory',
      });
    }
    // A credentials spec naming a file (`--creds=token:<file>`).
    if (typeof value === 'string' && /^token:./.test(value) && o.flag === 'creds')
      reads.push({
        option: `--${o.flag}`,
        path: inPod(value.slice('token:'.length)),
        mustExist: true,
        directory: false,
      });
  }
  const paramsFile =
    [...c.argv]
      .reverse()
      .find((a) => a.startsWith('--params-file='))
      ?.split('=')[1] ?? c.env[c.spec.paramsFileEnv];
  if (paramsFile)
    reads.push({ option: '--params-file', path: inPod(paramsFile), mustExist: true, directory: true });
  return reads;
}

export interface Dial {
  what: string;
  host: string;
  port: number;
  /** The option that names the address. */
  option?: OptionDef;
}

/** Address options that name where the service is reached or what it writes, not what it dials. */
const PUBLISHED: Record<string, readonly string[]> = {
  'stream-gateway': ['resource-proxy-address', 'resource-proxy-url', 'advertise-address'],
  'extension-proxy': ['resource-proxy-url'],
};

const DEFAULT_PORTS: Record<string, number> = { nats: 4222, tls: 4222, http: 80, https: 443 };

/**
 * Where a container connects: its address options (`host-port`, `url`, strings and lists named
 * `…-url`/`…-address`/`…-addr`, with a sibling `…-port` when the address has none), the gateways'
 * internal listener for apps that carry gateway client options, and the Kubernetes API when the
 * pod mounts a service account token or a kubeconfig is given.
 */
export function dials(c: ContainerConfig, pod: Json, gatewayInternalPort: number | undefined): Dial[] {
  const out: Dial[] = [];
  const options = c.spec.options ?? [];
  const published = PUBLISHED[c.app] ?? [];
  for (const o of options) {
    const value = c.config[camel(o.flag)];
    if (value === undefined || value === null || value === '' || published.includes(o.flag)) continue;
    const what = `--${o.flag}`;
    if (o.type === 'host-port') out.push({ what, host: value.host, port: value.port, option: o });
    else if (o.type === 'url' || /-url$/.test(o.flag)) {
      for (const u of (Array.isArray(value) ? value : String(value).split(',')).map((s: string) =>
        s.trim(),
      )) {
        const url = new URL(u);
        const scheme = url.protocol.replace(':', '');
        out.push({
          what,
          option: o,
          host: url.hostname,
          port: url.port ? Number(url.port) : (DEFAULT_PORTS[scheme] ?? 0),
        });
      }
    } else if (o.type === 'string' && /-(address|addr)$/.test(o.flag)) {
      const stem = o.flag.replace(/-(address|addr)$/, '');
      const port = c.config[camel(`${stem}-port`)];
      out.push({ what, host: String(value), port: Number(port), option: o });
    }
  }
  if (gatewayInternalPort !== undefined && options.some((o) => o.flag === 'gateway-server-name'))
    out.push({
      what: "the gateways' internal listener",
      host: 'argocd-agent-principal-internal',
      port: gatewayInternalPort,
    });
  if (pod.automountServiceAccountToken !== false || c.config.kubeconfig)
    out.push({ what: 'the Kubernetes API', host: 'kubernetes.default.svc', port: 443 });
  return out;
}

/** Checks each dial against both ends' NetworkPolicies. */
export function dialProblems(
  id: string,
  source: Pod,
  list: readonly Dial[],
  objects: readonly K8sObject[],
  pods: readonly Pod[],
  c?: { config: ContainerConfig; container: Json },
): string[] {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const problems: string[] = [];
  for (const d of list) {
    const dest: Destination = resolve(objects, pods, d.host, d.port, source.namespace);
    const at = `${id} dials ${d.host}:${d.port} (${d.what}, ${dest.via})`;
    if (dest.ports.length === 0) {
      problems.push(`${at}: nothing listens there`);
      continue;
    }
    const targets: Peer[] = dest.pods.length > 0 ? dest.pods : [{ external: d.host } as External];
    for (const t of targets)
      for (const port of dest.ports) {
        const r = allowed(policies, source, t, port);
        if (!r.ok) problems.push(`${at} → ${'external' in t ? t.external : t.name}:${port}: ${r.why}`);
      }
    const required = dest.pods.find((p) => p.requiresPassword)?.requiresPassword;
    if (required && c && d.option)
      problems.push(...passwordProblems(at, required, d.option, c.config, c.container));
  }
  return problems;
}

/**
 * A server that requires a password (Argo CD's Redis): the dialling option's family
 * (`--redis-…`) must set a password or credentials file, and a password from env must come from
 * the Secret key the server itself uses.
 */
function passwordProblems(
  at: string,
  required: { name: string; key: string },
  option: OptionDef,
  c: ContainerConfig,
  container: Json,
): string[] {
  const family = `${option.flag.split('-')[0]}-`;
  const creds = (c.spec.options ?? []).filter(
    (o) => o.flag.startsWith(family) && /password|creds/.test(o.flag),
  );
  const set = creds.filter((o) => c.config[camel(o.flag)] !== undefined && c.config[camel(o.flag)] !== '');
  const wanted = `${required.name}/${required.key}`;
  if (set.length === 0)
    return [
      `${at}: it requires the password of Secret ${wanted}, and none of ${creds.map((o) => `--${o.flag}`).join(', ') || 'its options'} is set`,
    ];
  const problems: string[] = [];
  for (const o of set) {
    const envNames = o.env === undefined ? [] : typeof o.env === 'string' ? [o.env] : [...o.env];
    const ref = (container.env ?? []).find((e: Json) => envNames.includes(e.name))?.valueFrom?.secretKeyRef;
    if (ref && `${ref.name}/${ref.key}` !== wanted)
      problems.push(
        `${at}: --${o.flag} comes from Secret ${ref.name}/${ref.key}, the server's password from ${wanted}`,
      );
  }
  return problems;
}

/** A Secret or ConfigMap key a pod takes a file or an env value from. */
export interface ObjectKey {
  kind: 'Secret' | 'ConfigMap';
  name: string;
  /** undefined: the whole object (a volume without items, envFrom). */
  key?: string;
  optional: boolean;
  /** What takes it, for messages. */
  use: string;
}

/** Every Secret and ConfigMap key a workload's pod takes: volumes (also projected) and env. */
export function objectKeys(w: K8sObject): ObjectKey[] {
  const pod = w.spec.template.spec;
  const out: ObjectKey[] = [];
  const source = (
    kind: ObjectKey['kind'],
    name: string,
    items: Json[] | undefined,
    optional: boolean,
    use: string,
  ) => {
    if (!items) out.push({ kind, name, optional, use });
    for (const it of items ?? []) out.push({ kind, name, key: it.key, optional, use });
  };
  for (const v of pod.volumes ?? []) {
    const use = `${w.metadata.name} volume ${v.name}`;
    if (v.secret) source('Secret', v.secret.secretName, v.secret.items, Boolean(v.secret.optional), use);
    if (v.configMap)
      source('ConfigMap', v.configMap.name, v.configMap.items, Boolean(v.configMap.optional), use);
    for (const s of v.projected?.sources ?? []) {
      if (s.secret) source('Secret', s.secret.name, s.secret.items, Boolean(s.secret.optional), use);
      if (s.configMap)
        source('ConfigMap', s.configMap.name, s.configMap.items, Boolean(s.configMap.optional), use);
    }
  }
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    for (const e of c.env ?? []) {
      const use = `${w.metadata.name}/${c.name} env ${e.name}`;
      const s = e.valueFrom?.secretKeyRef;
      const m = e.valueFrom?.configMapKeyRef;
      if (s) out.push({ kind: 'Secret', name: s.name, key: s.key, optional: Boolean(s.optional), use });
      if (m) out.push({ kind: 'ConfigMap', name: m.name, key: m.key, optional: Boolean(m.optional), use });
    }
    for (const e of c.envFrom ?? []) {
      const use = `${w.metadata.name}/${c.name} envFrom`;
      if (e.secretRef)
        out.push({ kind: 'Secret', name: e.secretRef.name, optional: Boolean(e.secretRef.optional), use });
      if (e.configMapRef)
        out.push({
          kind: 'ConfigMap',
          name: e.configMapRef.name,
          optional: Boolean(e.configMapRef.optional),
          use,
        });
    }
  }
  return out;
}

/** Does the bundle render the object with the key, or does the guide tell the operator to create it? */
export function provided(
  ref: ObjectKey,
  objects: readonly K8sObject[],
  docs: ReadonlyMap<string, GuideObject>,
): string | undefined {
  const rendered = find(objects, ref.kind, ref.name);
  if (rendered) {
    const keys = Object.keys({
      ...(rendered.data ?? {}),
      ...(rendered.stringData ?? {}),
      ...(rendered.binaryData ?? {}),
    });
    if (ref.key !== undefined && !keys.includes(ref.key))
      return `${ref.use}: ${ref.kind} ${ref.name} (in the bundle) has no key ${ref.key}`;
    return undefined;
  }
  const doc = docs.get(`${ref.kind}/${ref.name}`);
  if (!doc)
    return `${ref.use}: ${ref.kind} ${ref.name} is neither in the bundle nor listed by the install guide${ref.optional ? ' (optional, but an operator must know it exists)' : ''}`;
  if (ref.key !== undefined && !doc.keys.includes(ref.key))
    return `${ref.use}: ${ref.kind} ${ref.name} has no key ${ref.key} in ${doc.ref} (it lists ${doc.keys.join(', ') || 'none'})`;
  return undefined;
}

/** What lies at a path in a container: nothing mounted, a volume nothing fills, or Secret/ConfigMap keys. */
export type Behind =
  | { kind: 'unmounted' }
  | { kind: 'unfilled'; volume: string; type: string }
  | { kind: 'keys'; volume: string; subPath: boolean; relative: string; keys: Omit<ObjectKey, 'use'>[] };

/**
 * The Secret/ConfigMap keys behind a path in a container: the volume mounted at (or above) it,
 * and the key(s) it projects there (a directory: every key).
 */
export function keysBehind(w: K8sObject, container: Json, podPath: string, directory = false): Behind {
  const pod = w.spec.template.spec;
  const mount = [...(container.volumeMounts ?? [])]
    .filter((m: Json) => podPath === m.mountPath || podPath.startsWith(`${m.mountPath}/`))
    .sort((a: Json, b: Json) => b.mountPath.length - a.mountPath.length)[0];
  const volume = mount && (pod.volumes ?? []).find((v: Json) => v.name === mount.name);
  if (!mount || !volume) return { kind: 'unmounted' };
  const relative = mount.subPath ?? path.posix.relative(mount.mountPath, podPath);
  const sources: Array<{ kind: ObjectKey['kind']; o: Json }> = [];
  if (volume.secret)
    sources.push({ kind: 'Secret', o: { ...volume.secret, name: volume.secret.secretName } });
  else if (volume.configMap) sources.push({ kind: 'ConfigMap', o: volume.configMap });
  else if (volume.projected)
    for (const s of volume.projected.sources ?? []) {
      if (s.secret) sources.push({ kind: 'Secret', o: s.secret });
      if (s.configMap) sources.push({ kind: 'ConfigMap', o: s.configMap });
    }
  else
    return {
      kind: 'unfilled',
      volume: volume.name,
      type: Object.keys(volume)
        .filter((k) => k !== 'name')
        .join(', '),
    };
  const keys: Omit<ObjectKey, 'use'>[] = [];
  for (const { kind, o } of sources) {
    const base = { kind, name: o.name as string, optional: Boolean(o.optional) };
    if (relative === '' || directory) {
      if (o.items) for (const it of o.items) keys.push({ ...base, key: it.key });
      else keys.push(base);
    } else {
      const item = o.items ? o.items.find((it: Json) => it.path === relative) : { key: relative };
      if (item) keys.push({ ...base, key: item.key });
    }
  }
  return { kind: 'keys', volume: volume.name, subPath: Boolean(mount.subPath), relative, keys };
}

/** Each file a container reads comes from Secret/ConfigMap keys the bundle renders or the guide lists. */
export function fileProblems(
  id: string,
  w: K8sObject,
  container: Json,
  reads: readonly FileRead[],
  objects: readonly K8sObject[],
  docs: ReadonlyMap<string, GuideObject>,
): string[] {
  const problems: string[] = [];
  for (const r of reads) {
    const at = `${id} reads ${r.path} (${r.option})`;
    const behind = keysBehind(w, container, r.path, r.directory);
    if (behind.kind === 'unmounted') {
      // Features that are off read nothing; the app's own validation fails the pod if it would.
      if (r.mustExist) problems.push(`${at}: no volume is mounted there`);
      continue;
    }
    if (behind.kind === 'unfilled') {
      problems.push(`${at}: volume ${behind.volume} is ${behind.type}, which nothing fills`);
      continue;
    }
    if (behind.subPath)
      problems.push(
        `${at}: mounted with subPath, which the kubelet never updates (rotation needs a directory mount)`,
      );
    if (behind.keys.length === 0) {
      problems.push(`${at}: volume ${behind.volume} projects no key at ${behind.relative}`);
      continue;
    }
    for (const k of behind.keys) {
      const p = provided({ ...k, use: `${at} from volume ${behind.volume}` }, objects, docs);
      if (p) problems.push(p);
    }
  }
  return problems;
}

/** Who calls a listener (anyone: agents come from other networks), and how they can prove who they are. */
export interface Callers {
  who: 'anyone' | Pod[];
  presents: Credential[];
}

const argocdPod = (name: string, pods: readonly Pod[]): Pod => {
  const p = pods.find((x) => x.labels['app.kubernetes.io/name'] === name);
  if (!p) throw new Error(`the cluster fixture has no ${name} pod`);
  return p;
};

/**
 * The callers of each listener, by app and listener name. Agents dial the gateway from anywhere
 * with a certificate or token from `pullplane agent create`, or their mesh identity; only the
 * proxies use its internal listener. Argo CD's components that talk to clusters use the resource
 * proxy with what a cluster Secret holds (token or certificate); the ones that use Redis (those
 * Argo CD's own policy for its Redis admits) use the redis proxy with Argo CD's Redis password;
 * only the API server calls extension backends, and it can send headers (a bearer token from
 * argocd-secret) but no client certificate. Behind a mesh every caller has its identity.
 */
export function callersOf(app: string, listener: string, pods: readonly Pod[], proxies: Pod[]): Callers {
  const argocd = (...names: string[]) => names.map((n) => argocdPod(n, pods));
  const table: Record<string, Callers> = {
    'stream-gateway/agents': {
      who: 'anyone',
      presents: ['client-certificate', 'bearer-token', 'mesh-identity'],
    },
    'stream-gateway/internal': { who: proxies, presents: ['client-certificate', 'mesh-identity'] },
    'resource-proxy/api': {
      who: argocd('argocd-server', 'argocd-application-controller'),
      presents: ['bearer-token', 'client-certificate', 'mesh-identity'],
    },
    'redis-proxy/redis': {
      who: argocd('argocd-server', 'argocd-repo-server', 'argocd-application-controller'),
      presents: ['password'],
    },
    'extension-proxy/api': { who: argocd('argocd-server'), presents: ['bearer-token', 'mesh-identity'] },
  };
  const callers = table[`${app}/${listener}`];
  if (!callers) throw new Error(`${app} listener ${listener}: say who calls it in agreement.ts`);
  return callers;
}

export const SCRAPER: Pod = {
  name: 'prometheus',
  namespace: 'monitoring',
  labels: { 'app.kubernetes.io/name': 'prometheus' },
  ports: [],
};
const INTRUDERS: Peer[] = [
  { name: 'intruder', namespace: 'argocd', labels: { 'app.kubernetes.io/name': 'intruder' }, ports: [] },
  { name: 'intruder', namespace: 'elsewhere', labels: { 'app.kubernetes.io/name': 'intruder' }, ports: [] },
  { external: 'a host outside the cluster' },
];

/**
 * Each caller reaches the port and can prove who it is there; with named callers and
 * `exclusive`, nobody else reaches it.
 */
export function listenerProblems(
  id: string,
  target: Pod,
  port: number,
  callers: Callers,
  policies: readonly K8sObject[],
  listener?: Listener,
  exclusive = true,
): string[] {
  const problems: string[] = [];
  const reach = (p: Peer) => allowed(policies, p, target, port);
  const name = (p: Peer) => ('external' in p ? p.external : `${p.namespace}/${p.name}`);
  for (const c of callers.who === 'anyone' ? [INTRUDERS[2]!, SCRAPER] : callers.who) {
    const r = reach(c);
    if (!r.ok) problems.push(`${id} port ${port}: its caller ${name(c)} is refused (${r.why})`);
  }
  if (callers.who !== 'anyone' && exclusive)
    for (const i of INTRUDERS)
      if (reach(i).ok) problems.push(`${id} port ${port}: ${name(i)}, not a caller, gets in`);
  if (listener && !callers.presents.some((p) => listener.accepts.includes(p)))
    problems.push(
      `${id} port ${port}: accepts ${listener.accepts.join(', ') || 'no credential'}, its callers can present only ${callers.presents.join(', ')}`,
    );
  return problems;
}
