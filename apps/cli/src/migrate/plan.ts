import {
  type AppNames,
  appNameRegistry,
  type ConfigFamily,
  describeArgocdAgentGap,
  FAMILY_PARAMS_PREFIX,
  findArgocdAgentGap,
  type OptionNames,
} from '@pullplane/config';
import type { K8sObject } from './read-install.js';

export type Side = 'principal' | 'agent';
export type Mesh = 'none' | 'istio' | 'linkerd';

/** One line of the report. */
export interface Note {
  section: 'carried' | 'bundle' | 'secrets' | 'action' | 'no-equivalent' | 'unknown';
  text: string;
}

/** A Deployment volume to point at another Secret (and key layout). */
export interface VolumePatch {
  deployment: string;
  volume: string;
  /** A Secret volume, or a projected one made of several Secrets' keys. */
  sources: Array<{ secret: string; items: Array<{ key: string; path: string }> }>;
}

/** A Secret of argocd-agent's installation that the overlay mounts, as MIGRATION.md lists it. */
export interface SecretRow {
  name: string;
  /** Its keys in the installation (or, when it was not in the input, the keys assumed). */
  keys: string[];
  /** Found in the input, or assumed from argocd-agent's layout. */
  found: boolean;
  /** `<deployment> volume <volume>` and which key lands where. */
  mounts: string[];
}

export interface SidePlan {
  side: Side;
  namespace: string;
  mesh: Mesh;
  /** Our params keys and the values they take over. */
  params: Map<string, string>;
  volumes: VolumePatch[];
  /** The installation's Secrets the overlay mounts (MIGRATION.md's table). */
  secrets: SecretRow[];
  notes: Note[];
}

/** Where a value came from in argocd-agent's installation. */
interface Found {
  value: string;
  from: string;
  kind: 'key' | 'env' | 'flag';
  /** The argocd-agent name (params key, env var or flag). */
  name: string;
}

const CLUSTER_SECRET_LABEL = 'argocd-agent.argoproj-labs.io/agent-name';
const SELF_REGISTERED_LABEL = 'argocd-agent.argoproj-labs.io/self-registered-cluster';

/**
 * Keys the deploy/ bundles set themselves: listeners, ports their Services and probes use, the
 * paths they mount Secrets at. argocd-agent's values for them describe its own Deployment.
 */
const BUNDLE_KEYS = new Set([
  'principal.listen.host',
  'principal.listen.port',
  'principal.metrics.port',
  'principal.healthz.port',
  'principal.namespace',
  'principal.kubeconfig',
  'principal.tls.server.cert-path',
  'principal.tls.server.key-path',
  'principal.tls.server.root-ca-path',
  'principal.resource-proxy.tls.cert-path',
  'principal.resource-proxy.tls.key-path',
  'principal.resource-proxy.ca.path',
  'principal.resource-proxy.token.key-path',
  'principal.jwt.key-path',
  'principal.redis.tls.ca-path',
  'principal.redis-proxy.tls.cert-path',
  'principal.redis-proxy.tls.key-path',
  'principal.redis.proxy.server.tls.cert-path',
  'principal.redis.proxy.server.tls.key-path',
  'principal.resource-proxy.address',
  'agent.tls.client.cert-path',
  'agent.tls.client.key-path',
  'agent.tls.root-ca-path',
  'agent.redis.tls.ca-path',
  'agent.metrics.port',
  'agent.healthz.port',
  'agent.kubeconfig',
]);

/** Secret-name keys: they map Secrets onto the bundle's volumes instead of becoming params. */
const SECRET_NAME_KEYS: Record<string, string> = {
  'principal.tls.secret-name': 'argocd-agent-principal-tls',
  'principal.tls.server.root-ca-secret-name': 'argocd-agent-ca',
  'principal.resource-proxy.secret-name': 'argocd-agent-resource-proxy-tls',
  'principal.resource-proxy.ca.secret-name': 'argocd-agent-ca',
  'principal.jwt.secret-name': 'argocd-agent-jwt',
  'principal.redis.proxy.server.tls.secret-name': 'argocd-redis-proxy-tls',
  'principal.redis.ca-secret-name': 'argocd-redis-tls',
  'agent.tls.secret-name': 'argocd-agent-client-tls',
  'agent.tls.root-ca-secret-name': 'argocd-agent-ca',
  'agent.redis.tls.ca-secret-name': 'argocd-redis-tls',
};

/** The family's options: every app of the family, first reader wins (they agree on names). */
function familyOptions(family: ConfigFamily): OptionNames[] {
  return Object.values(appNameRegistry())
    .filter((a: AppNames) => a.family === family)
    .flatMap((a) => a.options);
}

/** The params key an argocd-agent name maps to, if a pullplane option of the family reads it. */
function ourKey(options: OptionNames[], kind: Found['kind'], name: string): string | undefined {
  const option = options.find((o) =>
    kind === 'key'
      ? o.params.includes(name)
      : kind === 'env'
        ? o.env.includes(name)
        : o.flag === name || o.aliases.includes(name),
  );
  return option?.params[0];
}

/**
 * The plans for the sides present (principal, agent, or both). Each group is one cluster's
 * objects (a file, or what was read from one cluster): a side's Secrets are looked up in its own.
 */
export function planMigration(groups: ReadonlyArray<readonly K8sObject[]>): SidePlan[] {
  const plans: SidePlan[] = [];
  for (const side of ['principal', 'agent'] as const) {
    for (const objects of groups) {
      const plan = planSide(side, objects);
      if (plan) {
        plans.push(plan);
        break;
      }
    }
  }
  return plans;
}

function planSide(side: Side, objects: readonly K8sObject[]): SidePlan | undefined {
  const prefix = FAMILY_PARAMS_PREFIX[side];
  const configMap = objects.find(
    (o) =>
      o.kind === 'ConfigMap' &&
      o.metadata.name === 'argocd-agent-params' &&
      Object.keys(o.data ?? {}).some((k) => k.startsWith(prefix)),
  );
  const deployment = objects.find(
    (o) =>
      o.kind === 'Deployment' &&
      o.metadata.name === (side === 'principal' ? 'argocd-agent-principal' : 'argocd-agent-agent'),
  );
  if (!configMap && !deployment) return undefined;
  const namespace = configMap?.metadata.namespace ?? deployment?.metadata.namespace ?? 'argocd';
  const found = collect(configMap, deployment);
  const options = familyOptions(side);
  const notes: Note[] = [];
  const params = new Map<string, string>();
  const secrets = new Map<string, string>();
  for (const f of found.values()) {
    const shown = `${f.name}${f.value === '' ? '' : ` = ${JSON.stringify(f.value)}`} (${f.from})`;
    if (f.kind === 'key' && f.name in SECRET_NAME_KEYS) {
      if (f.value !== '') secrets.set(f.name, f.value);
      continue;
    }
    const key = ourKey(options, f.kind, f.name);
    if (key && key in SECRET_NAME_KEYS) {
      if (f.value !== '') secrets.set(key, f.value);
      continue;
    }
    if (f.value === '') continue;
    if (key && BUNDLE_KEYS.has(key)) {
      notes.push({
        section: 'bundle',
        text: `${shown}: the ${side} bundle sets it (its Deployments, Services, probes and mounts agree on it)`,
      });
      continue;
    }
    if (key) {
      params.set(key, f.value);
      continue;
    }
    const gap = findArgocdAgentGap(side, f.kind, f.name);
    if (gap) {
      const off = gap.name.inert?.includes(f.value.trim().toLowerCase());
      notes.push({
        section: 'no-equivalent',
        text: `${shown}: ${describeArgocdAgentGap(gap.gap)}${off ? ' (off here: nothing is lost)' : ''}`,
      });
      continue;
    }
    notes.push({ section: 'unknown', text: `${shown}: neither pullplane nor argocd-agent reads this name` });
  }
  const mesh = side === 'principal' ? transformPrincipal(params, notes) : transformAgent(params, notes);
  if (side === 'principal') clusterSecrets(objects, namespace, params, notes);
  const inNamespace = secretsByName(objects, namespace);
  const volumes =
    side === 'principal'
      ? principalVolumes(inNamespace, secrets, notes)
      : agentVolumes(inNamespace, secrets, notes);
  for (const [k, v] of params) notes.push({ section: 'carried', text: `${k} = ${JSON.stringify(v)}` });
  return { side, namespace, mesh, params, volumes, secrets: secretRows(volumes, inNamespace), notes };
}

/** Each Secret the volume patches mount: its keys in the installation and where they land. */
function secretRows(volumes: readonly VolumePatch[], inNamespace: Map<string, K8sObject>): SecretRow[] {
  const rows = new Map<string, SecretRow>();
  for (const v of volumes) {
    for (const s of v.sources) {
      const found = inNamespace.get(s.secret);
      const row = rows.get(s.secret) ?? {
        name: s.secret,
        keys: found ? Object.keys({ ...(found.data ?? {}), ...(found.stringData ?? {}) }).sort() : [],
        found: found !== undefined,
        mounts: [],
      };
      if (!found) row.keys = [...new Set([...row.keys, ...s.items.map((i) => i.key)])].sort();
      const moved = s.items.filter((i) => i.key !== i.path).map((i) => `${i.key} as ${i.path}`);
      row.mounts.push(
        `${v.deployment} volume ${v.volume}${moved.length > 0 ? ` (${moved.join(', ')})` : ''}`,
      );
      rows.set(s.secret, row);
    }
  }
  return [...rows.values()];
}

/** CM keys, then the Deployment's literal env values and flags (which win, as in the pod). */
function collect(configMap: K8sObject | undefined, deployment: K8sObject | undefined): Map<string, Found> {
  const found = new Map<string, Found>();
  for (const [k, v] of Object.entries(configMap?.data ?? {})) {
    found.set(`key:${k}`, {
      value: String(v),
      from: `params key in ConfigMap ${configMap!.metadata.name}`,
      kind: 'key',
      name: k,
    });
  }
  const container = ((deployment?.spec?.template as { spec?: { containers?: unknown[] } } | undefined)?.spec
    ?.containers?.[0] ?? {}) as {
    env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
    args?: string[];
    command?: string[];
  };
  for (const e of container.env ?? []) {
    // Env read from the params ConfigMap repeats its key; a literal value overrides it.
    if (e.value !== undefined) {
      found.set(`env:${e.name}`, {
        value: e.value,
        from: `env of Deployment ${deployment!.metadata.name}`,
        kind: 'env',
        name: e.name,
      });
    }
  }
  const args = [...(container.command ?? []), ...(container.args ?? [])];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) continue;
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const value =
      eq >= 0
        ? arg.slice(eq + 1)
        : args[i + 1] !== undefined && !args[i + 1]!.startsWith('--')
          ? args[++i]!
          : 'true';
    found.set(`flag:${name}`, {
      value,
      from: `flag of Deployment ${deployment!.metadata.name}`,
      kind: 'flag',
      name,
    });
  }
  return found;
}

function transformPrincipal(params: Map<string, string>, notes: Note[]): Mesh {
  const auth = params.get('principal.auth');
  let mesh: Mesh = 'none';
  if (auth?.startsWith('userpass')) {
    params.delete('principal.auth');
    notes.push({
      section: 'action',
      text: "principal.auth is userpass: (argocd-agent's deprecated username/password file), which pullplane refuses: issue each agent a certificate with `pullplane agent create <name>` (the bundle's default principal.auth is mtls)",
    });
  } else if (auth?.startsWith('header:x-forwarded-client-cert') || auth?.startsWith('header:l5d-client-id')) {
    mesh = auth.startsWith('header:x') ? 'istio' : 'linkerd';
    params.delete('principal.auth');
    params.delete('principal.tls.insecure-plaintext');
    params.delete('principal.listen.host');
    notes.push({
      section: 'action',
      text: `principal.auth reads ${mesh === 'istio' ? 'Istio' : 'Linkerd'}'s identity header: the overlay builds on deploy/${mesh}/principal, whose preset is pinned to a trust domain and the agents' namespaces; set principal.mesh.trust-domain and principal.mesh.agent-namespaces there (argocd-agent's regex admits any namespace and trust domain)`,
    });
  } else if (auth?.startsWith('mtls')) {
    // argocd-agent's default (and its explicit form) name the agent by the subject's CN: our mtls.
    if (auth === 'mtls:CN=([^,]+)' || auth === 'mtls:subject:CN=([^,]+)')
      params.set('principal.auth', 'mtls');
    notes.push({
      section: 'action',
      text: 'argocd-agent\'s agent certificates carry no credential kind and are refused by the gateway: re-issue them with `pullplane agent create <name>` (URI SAN spiffe://pullplane/agent/<name>), or, for the switch-over only, set principal.tls.client-cert.allow-legacy: "true" (see the stream gateway README for the risk)',
    });
  }
  if (params.get('principal.redis.tls.enabled') === 'true') {
    notes.push({
      section: 'action',
      text: "principal.redis.tls.enabled turns on TLS towards argocd-redis and on the redis proxy's listener, as in argocd-agent: the bundle mounts argocd-redis-proxy-tls for the listener; point the Argo CD server at it with deploy/argocd/redis-tls",
    });
  }
  notes.push({
    section: 'action',
    text: "create the proxies' certificates for the gateways' internal listener (pullplane only), from the CA that signs the gateway's certificate (argocd-agentctl's is in argocd-agent-ca: its tls.crt as ./pki/ca.crt, its tls.key as ./pki/ca.key): `pullplane cert create argocd-agent-resource-proxy --kind proxy --ca-dir ./pki --secret-name argocd-agent-resource-proxy-client-tls`, and the same for argocd-agent-redis-proxy and argocd-agent-extension-proxy (Secrets argocd-agent-redis-proxy-client-tls, argocd-agent-extension-proxy-client-tls)",
  });
  notes.push({
    section: 'action',
    text: "create the extension proxy's Secrets (pullplane only; argocd-agent has no extension proxy): its server certificate `pullplane cert create argocd-agent-extension-proxy --kind server --ca-dir ./pki --dns argocd-agent-extension-proxy --secret-name argocd-agent-extension-proxy-tls`, and argocd-agent-extension-proxy-token (key token.pub, the public key of the Argo CD server's bearer token), as deploy/README.md shows",
  });
  notes.push({
    section: 'action',
    text: "create the NATS identities (pullplane only: argocd-agent has no NATS, pullplane's holds presence and revocations and admits one nkey per role): `pullplane nats nkeys --dir ./nats | kubectl apply -n <namespace> -f -`, and keep ./nats/admin.nk for `pullplane agent revoke`",
  });
  notes.push({
    section: 'action',
    text: "the gateways' server certificate (argocd-agent-principal-tls) must also name argocd-agent-principal-internal (proxies reach gateways by pod IP and verify that name): re-issue it with that DNS SAN",
  });
  return mesh;
}

function transformAgent(params: Map<string, string>, notes: Note[]): Mesh {
  const port = params.get('agent.server.port');
  if (port !== undefined && port !== '8443') {
    params.delete('agent.server.port');
    notes.push({
      section: 'action',
      text: `agent.server.port was ${port}: pullplane's principal Service (argocd-agent-principal) listens on 8443, which the bundle dials; if a load balancer or ingress in front of it forwards ${port}, set agent.server.port back to ${port}`,
    });
  }
  const creds = params.get('agent.creds');
  if (creds?.startsWith('userpass')) {
    params.set('agent.creds', 'mtls:');
    notes.push({
      section: 'action',
      text: "agent.creds is userpass: (argocd-agent's deprecated username/password file): the overlay sets mtls:, with the agent's certificate from `pullplane agent create <name>` in Secret argocd-agent-client-tls",
    });
  }
  return creds?.startsWith('header:') ? 'istio' : 'none';
}

/** argocd-agent's cluster Secrets: adopted as their agents connect. */
function clusterSecrets(
  objects: readonly K8sObject[],
  namespace: string,
  params: Map<string, string>,
  notes: Note[],
): void {
  const clusters = objects.filter(
    (o) =>
      o.kind === 'Secret' &&
      o.metadata.labels?.[CLUSTER_SECRET_LABEL] !== undefined &&
      (o.metadata.namespace ?? namespace) === namespace,
  );
  if (clusters.length === 0) return;
  params.set('principal.argocd-agent.adopt-clusters', 'true');
  const self = clusters
    .filter((s) => s.metadata.labels?.[SELF_REGISTERED_LABEL] === 'true')
    .map((s) => s.metadata.name);
  const ctl = clusters
    .filter((s) => s.metadata.labels?.[SELF_REGISTERED_LABEL] !== 'true')
    .map((s) => s.metadata.name);
  notes.push({
    section: 'secrets',
    text: `${clusters.length} cluster Secret(s) written by argocd-agent (${clusters.map((s) => s.metadata.name).join(', ')}): principal.argocd-agent.adopt-clusters is on, so each is rewritten as its agent connects (name and server kept, a caller token instead of argocd-agent's credentials)`,
  });
  if (self.length > 0)
    notes.push({
      section: 'secrets',
      text: `self-registered (${self.join(', ')}): their RS512 tokens keep working before adoption, verified with the JWT key of argocd-agent-jwt`,
    });
  if (ctl.length > 0)
    notes.push({
      section: 'action',
      text: `argocd-agentctl's (${ctl.join(', ')}) carry a client certificate without a credential kind, which the resource proxy never accepts as a caller: they work again once their agent has connected to pullplane (or issue a kubeconfig with \`pullplane kubeconfig\`)`,
    });
}

/** The Secrets of the side's namespace (the principal's and an agent's may share names). */
const secretsByName = (objects: readonly K8sObject[], namespace: string) =>
  new Map(
    objects
      .filter((o) => o.kind === 'Secret' && (o.metadata.namespace ?? namespace) === namespace)
      .map((o) => [o.metadata.name, o]),
  );

/** `argocd-agent-ca` as argocd-agentctl writes it holds tls.crt (and the CA's key), not ca.crt. */
function caKey(secrets: Map<string, K8sObject>, name: string, notes: Note[]): string {
  const s = secrets.get(name);
  if (s && 'ca.crt' in (s.data ?? {})) return 'ca.crt';
  notes.push({
    section: 'secrets',
    text: `${name}: its tls.crt is mounted as ca.crt${s ? ' (it has no ca.crt key)' : " (not in the input: argocd-agentctl's layout assumed)"}; its tls.key, the CA's private key, is never mounted`,
  });
  return 'tls.crt';
}

function principalVolumes(
  secrets: Map<string, K8sObject>,
  names: Map<string, string>,
  notes: Note[],
): VolumePatch[] {
  const name = (key: string) => names.get(key) ?? SECRET_NAME_KEYS[key]!;
  const tls = (secret: string) => [
    {
      secret,
      items: [
        { key: 'tls.crt', path: 'tls.crt' },
        { key: 'tls.key', path: 'tls.key' },
      ],
    },
  ];
  const patches: VolumePatch[] = [];
  const gatewayCa = name('principal.tls.server.root-ca-secret-name');
  const proxyCa = name('principal.resource-proxy.ca.secret-name');
  const gatewayCaKey = caKey(secrets, gatewayCa, notes);
  const proxyCaKey = proxyCa === gatewayCa ? gatewayCaKey : caKey(secrets, proxyCa, notes);
  const ca = (secret: string, key: string) => [{ secret, items: [{ key, path: 'ca.crt' }] }];
  patches.push({
    deployment: 'argocd-agent-principal',
    volume: 'tls-server',
    sources: tls(name('principal.tls.secret-name')),
  });
  patches.push({
    deployment: 'argocd-agent-principal',
    volume: 'tls-ca',
    sources: ca(gatewayCa, gatewayCaKey),
  });
  patches.push({
    deployment: 'argocd-agent-principal',
    volume: 'jwt',
    sources: [{ secret: name('principal.jwt.secret-name'), items: [{ key: 'jwt.key', path: 'jwt.key' }] }],
  });
  patches.push({
    deployment: 'argocd-agent-resource-proxy',
    volume: 'tls-server',
    sources: tls(name('principal.resource-proxy.secret-name')),
  });
  patches.push({
    deployment: 'argocd-agent-resource-proxy',
    volume: 'tls-ca',
    sources: ca(proxyCa, proxyCaKey),
  });
  patches.push({
    deployment: 'argocd-agent-resource-proxy',
    volume: 'jwt',
    sources: [{ secret: name('principal.jwt.secret-name'), items: [{ key: 'jwt.key', path: 'jwt.key' }] }],
  });
  patches.push({
    deployment: 'argocd-agent-redis-proxy',
    volume: 'tls-ca',
    sources: ca(gatewayCa, gatewayCaKey),
  });
  // argocd-agent has no extension proxy: it verifies the gateways (and any caller certificate)
  // against the same CA.
  patches.push({
    deployment: 'argocd-agent-extension-proxy',
    volume: 'tls-ca',
    sources: ca(gatewayCa, gatewayCaKey),
  });
  patches.push({
    deployment: 'argocd-agent-redis-proxy',
    volume: 'tls-redis-proxy',
    sources: tls(name('principal.redis.proxy.server.tls.secret-name')),
  });
  const jwt = secrets.get(name('principal.jwt.secret-name'));
  if (jwt)
    notes.push({
      section: 'secrets',
      text: `${jwt.metadata.name}: argocd-agent's RSA key signs pullplane's tokens as it is (RS512)`,
    });
  return patches;
}

function agentVolumes(
  secrets: Map<string, K8sObject>,
  names: Map<string, string>,
  notes: Note[],
): VolumePatch[] {
  const client = names.get('agent.tls.secret-name') ?? SECRET_NAME_KEYS['agent.tls.secret-name']!;
  const ca = names.get('agent.tls.root-ca-secret-name') ?? SECRET_NAME_KEYS['agent.tls.root-ca-secret-name']!;
  const patch: VolumePatch = {
    deployment: 'argocd-agent-agent',
    volume: 'credentials',
    sources: [
      {
        secret: client,
        items: [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
        ],
      },
      { secret: ca, items: [{ key: caKey(secrets, ca, notes), path: 'ca.crt' }] },
    ],
  };
  notes.push({
    section: 'secrets',
    text: `${client} (tls.crt, tls.key) + ${ca} (CA) → argocd-agent-agent volume credentials (argocd-agent keeps the CA in its own Secret; the bundle reads one directory)`,
  });
  return [patch];
}
