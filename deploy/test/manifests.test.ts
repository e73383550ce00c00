// Renders every Kustomize overlay under deploy/ with `kubectl kustomize` (offline), validates each
// object against its schema, and checks the invariants the deployment depends on: hardened,
// probed, resourced workloads with pinned images; configurations the apps themselves accept;
// ports that agree between flags/params keys, containers, probes, Services, NetworkPolicies and
// mesh policies; one HPA and PDB per principal Deployment; a three-node NATS; and, behind a mesh,
// injected pods whose plaintext listeners only the local sidecar can reach.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type AuthMethod, extractHeaderIdentity, parseCallerAuthMethod } from '@pullplane/auth';
import { parseArgocdExtensionConfig } from '@pullplane/extension-config';
import { agentAuthMethod, internalAuthMethod } from '@pullplane/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { callersOf } from './support/agreement.js';
import { appSpecs, IMAGE, POD_IP, removeScratch } from './support/apps.js';
import { CLUSTER, podsOf } from './support/network.js';
import {
  configsOf,
  containersOf,
  type Mesh,
  OVERLAYS,
  podOf,
  type Rendered,
  renderAll,
} from './support/overlays.js';
import {
  byKind,
  containerPort,
  DEPLOY_DIR,
  find,
  get,
  type K8sObject,
  key,
  REPO_ROOT,
  selects,
  workloads,
} from './support/render.js';
import { validateObject } from './support/validate.js';

const VERSION = (
  JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
const PRINCIPAL_DEPLOYMENTS = {
  'argocd-agent-principal': 'stream-gateway',
  'argocd-agent-resource-proxy': 'resource-proxy',
  'argocd-agent-redis-proxy': 'redis-proxy',
  'argocd-agent-extension-proxy': 'extension-proxy',
} as const;
/** The public Services of the principal and the listener each must reach. */
const PRINCIPAL_SERVICES = {
  'argocd-agent-principal': { port: 8443, app: 'stream-gateway', listener: 'agents' },
  'argocd-agent-resource-proxy': { port: 9090, app: 'resource-proxy', listener: 'api' },
  'argocd-agent-redis-proxy': { port: 6379, app: 'redis-proxy', listener: 'redis' },
  'argocd-agent-extension-proxy': { port: 8090, app: 'extension-proxy', listener: 'api' },
} as const;
/** Params keys the lead's code may not have yet; none pending today. */
const PENDING_PARAMS_KEYS = new Set<string>();

let rendered: Map<string, Rendered>;
beforeAll(async () => {
  rendered = await renderAll();
}, 60_000);
afterAll(removeScratch);

const r = (dir: string): Rendered => {
  const x = rendered.get(dir);
  if (!x) throw new Error(`${dir} was not rendered`);
  return x;
};

/** All ports a pod's containers declare. */
const declaredPorts = (w: K8sObject): number[] =>
  containersOf(w).flatMap((c) => (c.ports ?? []).map((p: { containerPort: number }) => p.containerPort));
/** Workloads whose pods a selector selects. */
const selected = (objects: K8sObject[], selector: Parameters<typeof selects>[0]) =>
  workloads(objects).filter((w) => selects(selector, podOf(w).metadata.labels));

describe('deploy/ overlays', () => {
  it('covers every kustomization under deploy/ that is not a component', () => {
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const full = path.join(dir, name);
        if (statSync(full).isDirectory()) walk(full);
        else if (name === 'kustomization.yaml') {
          const k = parse(readFileSync(full, 'utf8')) as { kind?: string };
          if (k.kind !== 'Component') found.push(path.relative(DEPLOY_DIR, dir));
        }
      }
    };
    walk(DEPLOY_DIR);
    expect(found.sort()).toEqual(Object.keys(OVERLAYS).sort());
  });
});

describe('deploy/README.md, "Memory and CPU per pod"', () => {
  it('lists every workload of the base bundles with the requests and limits they render', () => {
    const readme = readFileSync(path.join(DEPLOY_DIR, 'README.md'), 'utf8');
    const section = readme.split('\n## Memory and CPU per pod\n')[1]?.split('\n## ')[0] ?? '';
    const listed = Object.fromEntries(
      section
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => {
          const [, name, requests, limits] = line.split('|').map((cell) => cell.trim());
          return [name!.replace(/`/g, ''), { requests, limits }];
        }),
    );
    const renderedSizes: Record<string, { requests: string; limits: string }> = {};
    for (const dir of ['base/principal', 'base/agent'])
      for (const w of workloads(r(dir).objects)) {
        const [c] = containersOf(w);
        const both = (kind: 'requests' | 'limits') =>
          `${c?.resources?.[kind]?.cpu}, ${c?.resources?.[kind]?.memory}`;
        renderedSizes[w.metadata.name] = { requests: both('requests'), limits: both('limits') };
      }
    expect(Object.keys(renderedSizes).length).toBeGreaterThan(5);
    expect(listed).toEqual(renderedSizes);
  });
});

describe.each(Object.entries(OVERLAYS))('%s', (dir, overlay) => {
  it('renders, and every object validates against its schema (unknown kinds fail)', () => {
    const { objects } = r(dir);
    expect(objects.length).toBeGreaterThan(0);
    const problems = objects.flatMap((o) => validateObject(o).map((p) => `${key(o)}: ${p}`));
    expect(problems).toEqual([]);
    const keys = objects.map(key);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
  });

  it('puts everything in the argocd namespace, labelled part-of pullplane', () => {
    const { objects } = r(dir);
    const clusterScoped = new Set(['ClusterRole', 'ClusterRoleBinding']);
    const problems: string[] = [];
    for (const o of objects) {
      if (!clusterScoped.has(o.kind) && o.metadata.namespace !== 'argocd')
        problems.push(`${key(o)}: namespace`);
      if (overlay.side !== 'argocd' && o.metadata.labels?.['app.kubernetes.io/part-of'] !== 'pullplane')
        problems.push(`${key(o)}: no app.kubernetes.io/part-of: pullplane`);
    }
    expect(problems).toEqual([]);
  });

  it('runs hardened workloads: probes, requests and limits, non-root, read-only, pinned images', () => {
    const problems: string[] = [];
    for (const w of workloads(r(dir).objects)) {
      const id = `${w.kind}/${w.metadata.name}`;
      const pod = podOf(w).spec;
      const psc = pod.securityContext ?? {};
      // Fixed IDs, and what OpenShift's restricted-v2 SCC admits: openshift.test.ts.
      if (psc.runAsNonRoot !== true) problems.push(`${id}: pod runAsNonRoot`);
      if (psc.runAsUser === 0) problems.push(`${id}: pod runs as root`);
      if (psc.seccompProfile?.type !== 'RuntimeDefault')
        problems.push(`${id}: seccompProfile RuntimeDefault`);
      if (pod.hostNetwork || pod.hostPID || pod.hostIPC) problems.push(`${id}: host namespaces`);
      for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
        const cid = `${id}/${c.name}`;
        const sc = c.securityContext ?? {};
        if (sc.allowPrivilegeEscalation !== false) problems.push(`${cid}: allowPrivilegeEscalation false`);
        if (sc.readOnlyRootFilesystem !== true) problems.push(`${cid}: readOnlyRootFilesystem`);
        if (sc.privileged) problems.push(`${cid}: privileged`);
        if (JSON.stringify(sc.capabilities?.drop) !== '["ALL"]')
          problems.push(`${cid}: capabilities drop ALL`);
        if (sc.capabilities?.add?.length) problems.push(`${cid}: adds capabilities`);
        if (sc.runAsUser === 0) problems.push(`${cid}: runs as root`);
        for (const kind of ['requests', 'limits']) {
          for (const res of ['cpu', 'memory']) {
            if (!c.resources?.[kind]?.[res]) problems.push(`${cid}: resources.${kind}.${res}`);
          }
        }
        if (!c.readinessProbe) problems.push(`${cid}: readinessProbe`);
        if (!c.livenessProbe) problems.push(`${cid}: livenessProbe`);
        const tag = /^[^@]+:([^:/@]+)$/.exec(c.image ?? '')?.[1];
        if (!tag || tag === 'latest' || !/^v?\d+\.\d+\.\d+/.test(tag))
          problems.push(`${cid}: image ${c.image} not pinned`);
        const ours = IMAGE.exec(c.image ?? '');
        if (ours && ours[2] !== VERSION) problems.push(`${cid}: ${c.image} is not version ${VERSION}`);
        if (c.imagePullPolicy === 'Always') problems.push(`${cid}: imagePullPolicy Always with a pinned tag`);
      }
      const mounted = new Set(
        containersOf(w).flatMap((c) => (c.volumeMounts ?? []).map((m: { name: string }) => m.name)),
      );
      for (const v of pod.volumes ?? [])
        if (!mounted.has(v.name)) problems.push(`${id}: volume ${v.name} is not mounted`);
      if (pod.serviceAccountName && !find(r(dir).objects, 'ServiceAccount', pod.serviceAccountName))
        problems.push(`${id}: service account ${pod.serviceAccountName} missing`);
    }
    expect(problems).toEqual([]);
  });

  it('gives each pullplane container a configuration its app accepts (flags, env, params keys, files)', async () => {
    const x = r(dir);
    const specs = await appSpecs();
    const problems: string[] = [];
    for (const [id, c] of x.configs) {
      problems.push(...c.problems.map((p) => `${id}: ${p}`));
      for (const f of c.flagNames)
        if (!c.spec.flags().includes(f)) problems.push(`${id}: unknown flag --${f}`);
      // Env vars the app does not read would be silently ignored; allow only its own, and the
      // ones the container's command, args or other env values reference.
      const container = workloads(x.objects)
        .flatMap((w) => containersOf(w).map((cc) => ({ id: `${w.metadata.name}/${cc.name}`, cc })))
        .find((e) => e.id === id)!.cc;
      const text = JSON.stringify([
        container.command ?? [],
        container.args ?? [],
        (container.env ?? []).map((e: { value?: string }) => e.value),
      ]);
      for (const n of c.envNames) {
        const referenced = text.includes(`$(${n})`) || text.includes(`$${n}`) || text.includes(`\${${n}`);
        if (!c.spec.envNames().includes(n) && !referenced)
          problems.push(`${id}: env ${n} is read by nothing`);
      }
    }
    // Every key of argocd-agent-params is read by one of the services that mount it.
    const params = find(x.objects, 'ConfigMap', 'argocd-agent-params');
    if (params) {
      const readers = [...x.configs.values()].map((c) => c.app);
      const known = new Set(readers.flatMap((a) => specs[a]!.paramsKeys()));
      const redisProxyPending = readers.includes('redis-proxy') && !specs['redis-proxy']!.options;
      for (const k of Object.keys(params.data ?? {})) {
        if (known.has(k) || PENDING_PARAMS_KEYS.has(k)) continue;
        if (redisProxyPending && k.startsWith('principal.redis-proxy.')) continue;
        problems.push(`argocd-agent-params: no service reads key ${k}`);
      }
    }
    if (overlay.side !== 'argocd') expect(x.configs.size).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('agrees on ports: container ports, probes, scrape annotations, Services and drain time follow the config', () => {
    const x = r(dir);
    const problems: string[] = [];
    for (const w of workloads(x.objects)) {
      const id = w.metadata.name;
      const pod = podOf(w);
      for (const cfg of configsOf(x, w)) {
        const c = containersOf(w).find((cc) => x.configs.get(`${id}/${cc.name}`) === cfg)!;
        const ports = (c.ports ?? []).map((p: { containerPort: number }) => p.containerPort).sort();
        const expected = [...cfg.listeners.map((l) => l.port), cfg.metricsPort, cfg.healthzPort].sort();
        if (JSON.stringify(ports) !== JSON.stringify(expected))
          problems.push(`${id}: container ports ${ports} but the config listens on ${expected}`);
        for (const [probe, pathName] of [
          ['readinessProbe', '/readyz'],
          ['livenessProbe', '/healthz'],
        ] as const) {
          const p = c[probe]?.httpGet;
          if (p?.path !== pathName) problems.push(`${id}: ${probe} path ${p?.path}, want ${pathName}`);
          if (containerPort(pod.spec, p?.port) !== cfg.healthzPort)
            problems.push(`${id}: ${probe} port ${p?.port} is not the healthz port ${cfg.healthzPort}`);
        }
        const a = pod.metadata.annotations ?? {};
        if (a['prometheus.io/scrape'] !== 'true' || Number(a['prometheus.io/port']) !== cfg.metricsPort)
          problems.push(`${id}: prometheus.io annotations do not point at metrics port ${cfg.metricsPort}`);
        const drain = cfg.config.drainTimeout;
        if (typeof drain === 'number' && !(pod.spec.terminationGracePeriodSeconds * 1000 > drain))
          problems.push(`${id}: terminationGracePeriodSeconds must exceed the ${drain} ms drain timeout`);
      }
    }
    for (const svc of byKind(x.objects, 'Service')) {
      const targets = selected(x.objects, svc.spec.selector);
      if (targets.length !== 1) {
        problems.push(`Service ${svc.metadata.name} selects ${targets.length} workloads`);
        continue;
      }
      const w = targets[0]!;
      const cfgs = configsOf(x, w);
      for (const p of svc.spec.ports ?? []) {
        const port = containerPort(podOf(w).spec, p.targetPort ?? p.port);
        if (port === undefined)
          problems.push(`Service ${svc.metadata.name}: targetPort ${p.targetPort} is not a container port`);
        const metricsService = svc.metadata.name.endsWith('-metrics');
        if (cfgs.length > 0) {
          const ok = metricsService
            ? cfgs.some((c) => c.metricsPort === port)
            : cfgs.some((c) => c.listeners.some((l) => l.port === port));
          if (!ok)
            problems.push(
              `Service ${svc.metadata.name}: port ${p.port} → ${port} is no listener of ${w.metadata.name}`,
            );
        }
      }
    }
    if (overlay.side === 'principal') {
      for (const [name, want] of Object.entries(PRINCIPAL_SERVICES)) {
        const svc = get(x.objects, 'Service', name);
        const p = svc.spec.ports?.find((pp: { port: number }) => pp.port === want.port);
        if (!p) {
          problems.push(`Service ${name} does not expose ${want.port}`);
          continue;
        }
        const w = selected(x.objects, svc.spec.selector)[0];
        const listener =
          w &&
          configsOf(x, w)
            .flatMap((c) => c.listeners)
            .find((l) => l.name === want.listener);
        if (!w || !listener || containerPort(podOf(w).spec, p.targetPort) !== listener.port)
          problems.push(
            `Service ${name}: port ${want.port} does not reach the ${want.app} ${want.listener} listener`,
          );
      }
    }
    expect(problems).toEqual([]);
  });

  it('admits traffic with NetworkPolicies on ports the selected pods listen on', () => {
    const x = r(dir);
    const problems: string[] = [];
    const meshPorts: Record<Mesh, number[]> = { none: [], istio: [15020], linkerd: [4191] };
    for (const np of byKind(x.objects, 'NetworkPolicy')) {
      const pods = selected(x.objects, np.spec.podSelector);
      if (pods.length === 0) continue; // selects pods installed by others (Argo CD's Redis)
      for (const rule of np.spec.ingress ?? []) {
        for (const p of rule.ports ?? []) {
          for (const w of pods) {
            if (!declaredPorts(w).includes(p.port) && !meshPorts[overlay.mesh].includes(p.port))
              problems.push(
                `NetworkPolicy ${np.metadata.name}: ${w.metadata.name} does not listen on ${p.port}`,
              );
          }
        }
        for (const from of rule.from ?? []) {
          if (
            from.podSelector &&
            !from.namespaceSelector &&
            selected(x.objects, from.podSelector).length === 0
          ) {
            // Argo CD's own pods are not part of these bundles (test/fixtures/cluster stands for them).
            const argocd = podsOf(CLUSTER).some((p) => selects(from.podSelector, p.labels));
            if (!argocd)
              problems.push(`NetworkPolicy ${np.metadata.name}: a from.podSelector selects nothing`);
          }
        }
      }
    }
    // Every listener of every principal pod is admitted by some rule (or it could not be reached).
    if (overlay.side === 'principal') {
      for (const w of workloads(x.objects)) {
        const policies = byKind(x.objects, 'NetworkPolicy').filter((np) =>
          selects(np.spec.podSelector, podOf(w).metadata.labels),
        );
        if (policies.length === 0) problems.push(`${w.metadata.name}: no NetworkPolicy selects it`);
        const admitted = new Set(
          policies.flatMap((np) =>
            (np.spec.ingress ?? []).flatMap((rule: { ports?: Array<{ port: number }> }) =>
              (rule.ports ?? []).map((p) => p.port),
            ),
          ),
        );
        const listening = configsOf(x, w).flatMap((c) => [...c.listeners.map((l) => l.port), c.metricsPort]);
        for (const p of listening)
          if (!admitted.has(p)) problems.push(`${w.metadata.name}: port ${p} admitted by no NetworkPolicy`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('binds RBAC to service accounts and roles that exist', () => {
    const { objects } = r(dir);
    const problems: string[] = [];
    for (const b of [...byKind(objects, 'RoleBinding'), ...byKind(objects, 'ClusterRoleBinding')]) {
      if (!find(objects, b.roleRef.kind, b.roleRef.name))
        problems.push(`${key(b)}: ${b.roleRef.kind} ${b.roleRef.name} missing`);
      for (const s of b.subjects ?? []) {
        const sa = s.kind === 'ServiceAccount' ? find(objects, 'ServiceAccount', s.name) : undefined;
        if (!sa || sa.metadata.namespace !== s.namespace)
          problems.push(`${key(b)}: subject ${s.namespace}/${s.name} missing`);
      }
    }
    expect(problems).toEqual([]);
  });

  if (overlay.side === 'principal') {
    it('scales each principal Deployment on its own: one HPA and one PDB each, replicas owned by the HPA', () => {
      const { objects } = r(dir);
      const problems: string[] = [];
      for (const [name, app] of Object.entries(PRINCIPAL_DEPLOYMENTS)) {
        const d = get(objects, 'Deployment', name);
        if (!containersOf(d).some((c) => IMAGE.exec(c.image)?.[1] === app))
          problems.push(`${name}: does not run ${app}`);
        if (d.spec.replicas !== undefined) problems.push(`${name}: sets replicas (the HPA owns them)`);
        const hpas = byKind(objects, 'HorizontalPodAutoscaler').filter(
          (h) => h.spec.scaleTargetRef.kind === 'Deployment' && h.spec.scaleTargetRef.name === name,
        );
        if (hpas.length !== 1 || !(hpas[0]!.spec.minReplicas >= 2))
          problems.push(`${name}: needs one HPA with minReplicas >= 2`);
        const pdbs = byKind(objects, 'PodDisruptionBudget').filter((p) =>
          selects(p.spec.selector, podOf(d).metadata.labels),
        );
        if (pdbs.length !== 1)
          problems.push(`${name}: needs exactly one PodDisruptionBudget, has ${pdbs.length}`);
      }
      // The gateway's registration Role: Secrets in its own namespace, nothing else.
      const role = get(objects, 'Role', 'argocd-agent-principal');
      expect(role.rules).toEqual([
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update', 'delete'] },
      ]);
      expect(byKind(objects, 'ClusterRole')).toEqual([]);
      expect(problems).toEqual([]);
    });

    it(
      overlay.externalNats
        ? 'uses the external NATS and drops the bundled one'
        : 'runs NATS JetStream as a three-node cluster holding three bucket replicas',
      () => {
        const x = r(dir);
        const params = get(x.objects, 'ConfigMap', 'argocd-agent-params').data;
        const natsUrls = [...x.configs.values()].map((c) => String(c.config.natsUrl));
        expect(new Set(natsUrls)).toEqual(new Set([params['principal.nats.url']]));
        if (overlay.externalNats) {
          expect(x.objects.filter((o) => o.metadata.name.startsWith('argocd-agent-nats'))).toEqual([]);
          expect(params['principal.nats.url']).not.toContain('argocd-agent-nats');
          return;
        }
        const sts = get(x.objects, 'StatefulSet', 'argocd-agent-nats');
        expect(sts.spec.replicas).toBe(3);
        expect(sts.spec.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBeTruthy();
        const anti =
          podOf(sts).spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0];
        expect(anti?.topologyKey).toBe('kubernetes.io/hostname');
        expect(selects(anti?.labelSelector, podOf(sts).metadata.labels)).toBe(true);
        const conf = get(x.objects, 'ConfigMap', 'argocd-agent-nats-config').data['nats.conf'] as string;
        const routes = [...conf.matchAll(/nats:\/\/([^:\s]+):6222/g)].map((m) => m[1]);
        expect(routes).toEqual([0, 1, 2].map((i) => `${sts.metadata.name}-${i}.${sts.spec.serviceName}`));
        expect(conf).toMatch(/jetstream\s*\{[^}]*store_dir:\s*\/data/);
        const headless = get(x.objects, 'Service', sts.spec.serviceName);
        expect(headless.spec.clusterIP).toBe('None');
        expect(headless.spec.publishNotReadyAddresses).toBe(true);
        const natsSvc = get(x.objects, 'Service', 'argocd-agent-nats');
        const u = new URL(params['principal.nats.url']);
        expect([u.hostname, Number(u.port)]).toEqual([natsSvc.metadata.name, natsSvc.spec.ports[0].port]);
        const gateway = x.configs.get('argocd-agent-principal/stream-gateway')!;
        expect(gateway.config.presenceReplicas).toBe(3);
        expect(gateway.config.presenceReplicas).toBeLessThanOrEqual(sts.spec.replicas);
        // NATS only from the principal services.
        const np = get(x.objects, 'NetworkPolicy', 'argocd-agent-nats');
        const clientRule = np.spec.ingress.find((rule: { ports: Array<{ port: number }> }) =>
          rule.ports.some((p) => p.port === 4222),
        );
        const clients = selected(x.objects, clientRule.from[0].podSelector)
          .map((w: K8sObject) => w.metadata.name)
          .sort();
        expect(clients).toEqual(Object.keys(PRINCIPAL_DEPLOYMENTS).sort());
      },
    );

    it('admits agents only to the gateway port, proxies to the internal port, Argo CD to the proxies', () => {
      const x = r(dir);
      const rules = (name: string) =>
        get(x.objects, 'NetworkPolicy', name).spec.ingress as Array<{
          from?: Array<{ podSelector?: object }>;
          ports: Array<{ port: number }>;
        }>;
      const gw = rules('argocd-agent-principal');
      const open = gw
        .filter((rule) => !rule.from)
        .flatMap((rule) => rule.ports.map((p) => p.port))
        .sort();
      const gateway = x.configs.get('argocd-agent-principal/stream-gateway')!;
      expect(open).toEqual([gateway.config.listenPort, gateway.metricsPort].sort());
      const internal = gw.find((rule) =>
        rule.ports.some((p) => p.port === gateway.config.internalListenPort),
      )!;
      expect(
        selected(x.objects, internal.from![0]!.podSelector as never)
          .map((w) => w.metadata.name)
          .sort(),
      ).toEqual(['argocd-agent-extension-proxy', 'argocd-agent-redis-proxy', 'argocd-agent-resource-proxy']);
      // Only the Argo CD server calls extension backends.
      const ext = rules('argocd-agent-extension-proxy').find((rr) => rr.ports.some((p) => p.port === 8090))!;
      expect(ext.from).toEqual([
        { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'argocd-server' } } },
      ]);
      // Which of Argo CD's pods reach the resource and redis proxies (and that nothing else
      // does): agreement.test.ts, against Argo CD's own pod labels.
      // Agents come in through a load balancer, the mesh, or (OpenShift) a Route.
      expect(get(x.objects, 'Service', 'argocd-agent-principal').spec.type).toBe(
        overlay.mesh === 'none' && !overlay.openshift ? 'LoadBalancer' : 'ClusterIP',
      );
    });
  }

  if (overlay.side === 'principal' && overlay.mesh === 'none') {
    it('serves TLS everywhere and authenticates with client certificates', () => {
      const x = r(dir);
      for (const c of x.configs.values()) {
        for (const l of c.listeners)
          expect([c.app, l.name, l.plaintext, l.headerAuth]).toEqual([c.app, l.name, false, false]);
      }
      // The redis listener's certificate is argocd-agent's Secret for it.
      const redis = get(x.objects, 'Deployment', 'argocd-agent-redis-proxy');
      expect(
        podOf(redis).spec.volumes.find((v: { name: string }) => v.name === 'tls-redis-proxy')?.secret
          ?.secretName,
      ).toBe('argocd-redis-proxy-tls');
      const gateway = x.configs.get('argocd-agent-principal/stream-gateway')!;
      expect([gateway.config.auth, gateway.config.internalAuth]).toEqual(['mtls', 'mtls']);
      expect(gateway.config.internalAllowedClients).toEqual([
        'argocd-agent-resource-proxy',
        'argocd-agent-redis-proxy',
        'argocd-agent-extension-proxy',
      ]);
      // Certificates without a credential kind are an explicit, documented opt-in, off here;
      // registration tokens expire.
      expect(gateway.config.allowLegacyAgentCerts).toBe(false);
      expect(gateway.config.registrationTokenTtl).toBeGreaterThan(0);
      // Gateways advertise their pod IP; proxies verify the gateway certificate against one
      // stable name instead (the internal Service's), which the certificate must carry.
      for (const app of ['resource-proxy', 'redis-proxy', 'extension-proxy']) {
        const proxy = [...x.configs.values()].find((c) => c.app === app);
        if (proxy && !proxy.config.gatewayPlaintext)
          expect(proxy.config.gatewayServerName, app).toBe('argocd-agent-principal-internal');
      }
      expect(get(x.objects, 'Service', 'argocd-agent-principal-internal').spec.clusterIP).toBe('None');
    });
  }

  if (overlay.side === 'principal') {
    it("requires Argo CD's Redis password from the redis proxy's clients (Secret argocd-redis, not optional)", () => {
      const x = r(dir);
      const w = get(x.objects, 'Deployment', 'argocd-agent-redis-proxy');
      const env = containersOf(w)[0]!.env.find((e: { name: string }) => e.name === 'REDIS_PASSWORD');
      expect(env?.valueFrom?.secretKeyRef).toEqual({ name: 'argocd-redis', key: 'auth' });
      expect(x.configs.get('argocd-agent-redis-proxy/redis-proxy')!.config.redisPassword).toBeTruthy();
    });
  }

  if (dir === 'test/fixtures/argocd-redis-tls') {
    it("makes the Argo CD server verify the redis proxy's certificate against the agent CA", () => {
      const w = get(r(dir).objects, 'Deployment', 'argocd-server');
      const c = containersOf(w)[0]!;
      expect(c.args).toEqual([
        '/usr/local/bin/argocd-server',
        '--redis-use-tls',
        '--redis-ca-certificate=/app/config/redis-proxy-tls/ca.crt',
      ]);
      const mount = c.volumeMounts.find(
        (m: { mountPath: string }) => m.mountPath === '/app/config/redis-proxy-tls',
      );
      const volume = podOf(w).spec.volumes.find((v: { name: string }) => v.name === mount?.name);
      expect(volume?.secret).toEqual({
        secretName: 'argocd-agent-ca',
        items: [{ key: 'ca.crt', path: 'ca.crt' }],
      });
    });
  }

  if (overlay.mesh !== 'none') {
    it(`injects every pod into ${overlay.mesh}`, () => {
      const problems: string[] = [];
      for (const w of workloads(r(dir).objects)) {
        const meta = podOf(w).metadata;
        const injected =
          overlay.mesh === 'istio'
            ? meta.labels?.['sidecar.istio.io/inject'] === 'true'
            : meta.annotations?.['linkerd.io/inject'] === 'enabled';
        if (!injected) problems.push(`${w.kind}/${w.metadata.name} is not injected`);
        const skip = `${meta.annotations?.['traffic.sidecar.istio.io/excludeInboundPorts'] ?? ''},${meta.annotations?.['config.linkerd.io/skip-inbound-ports'] ?? ''}`;
        for (const p of declaredPorts(w))
          if (skip.split(',').includes(String(p)))
            problems.push(`${w.metadata.name}: port ${p} bypasses the mesh`);
      }
      expect(problems).toEqual([]);
    });
  }

  if (overlay.side === 'principal' && overlay.mesh !== 'none') {
    it('serves plaintext only where the local sidecar alone can reach it, with mesh identity headers', () => {
      const x = r(dir);
      const problems: string[] = [];
      for (const w of workloads(x.objects)) {
        for (const c of configsOf(x, w)) {
          for (const l of c.listeners) {
            const id = `${w.metadata.name} ${l.name} (${l.host}:${l.port})`;
            if (!l.plaintext) problems.push(`${id}: TLS behind a mesh`);
            if (c.app !== 'redis-proxy' && !l.headerAuth)
              problems.push(`${id}: no mesh identity header auth`);
            if (overlay.mesh === 'istio') {
              if (l.host !== '127.0.0.1') problems.push(`${id}: not bound to 127.0.0.1`);
              // Istio forwards to the pod IP unless a Sidecar sends the port to loopback.
              const ok = byKind(x.objects, 'Sidecar').some(
                (s) =>
                  selects(s.spec.workloadSelector?.labels, podOf(w).metadata.labels) &&
                  (s.spec.ingress ?? []).some(
                    (i: { port: { number: number }; defaultEndpoint: string }) =>
                      i.port.number === l.port && i.defaultEndpoint === `127.0.0.1:${l.port}`,
                  ),
              );
              if (!ok) problems.push(`${id}: no Sidecar ingress forwards ${l.port} to 127.0.0.1:${l.port}`);
            } else {
              // Linkerd forwards to the pod IP only: bind it, never 0.0.0.0, and let a Server with
              // an mTLS-only AuthorizationPolicy guard the port.
              if (l.host !== POD_IP && l.host !== '127.0.0.1') problems.push(`${id}: bind the pod IP`);
              const servers = byKind(x.objects, 'Server').filter(
                (s) =>
                  selects(s.spec.podSelector, podOf(w).metadata.labels) &&
                  containerPort(podOf(w).spec, s.spec.port) === l.port,
              );
              const guarded = servers.some((s) =>
                byKind(x.objects, 'AuthorizationPolicy').some(
                  (ap) =>
                    ap.apiVersion.startsWith('policy.linkerd.io/') &&
                    ap.spec.targetRef.kind === 'Server' &&
                    ap.spec.targetRef.name === s.metadata.name &&
                    ap.spec.requiredAuthenticationRefs.length > 0 &&
                    ap.spec.requiredAuthenticationRefs.every(
                      (ref: { kind: string; name: string }) =>
                        ref.kind === 'MeshTLSAuthentication' && find(x.objects, ref.kind, ref.name),
                    ),
                ),
              );
              if (!guarded) problems.push(`${id}: no Linkerd Server with an mTLS-only AuthorizationPolicy`);
            }
          }
        }
      }
      const gateway = x.configs.get('argocd-agent-principal/stream-gateway')!;
      const proxy = x.configs.get('argocd-agent-resource-proxy/resource-proxy')!;
      // Each listener's mesh identity is pinned: the right service account in another
      // namespace or trust domain is someone else.
      const mesh = overlay.mesh as 'istio' | 'linkerd';
      for (const [what, method, admits] of [
        ['agent listener', agentAuthMethod(gateway.config as never), 'agent-example'],
        ['internal listener', internalAuthMethod(gateway.config as never), 'argocd-agent-resource-proxy'],
        ['resource proxy', parseCallerAuthMethod(proxy.config as never), 'argocd-server'],
      ] as const) {
        expect(meshAdmits(mesh, method, admits, 'argocd', 'cluster.local'), what).toBe(admits);
        expect(meshAdmits(mesh, method, admits, 'kube-system', 'cluster.local'), what).toBeUndefined();
        expect(meshAdmits(mesh, method, admits, 'argocd', 'evil.example'), what).toBeUndefined();
      }
      expect(gateway.config.internalAllowedClients.length).toBeGreaterThan(0);
      expect(proxy.config.allowedCallers).toEqual(meshCallers('resource-proxy', 'api'));
      expect(proxy.config.gatewayPlaintext).toBe(true);
      expect(String(x.configs.get('argocd-agent-redis-proxy/redis-proxy')!.config.gatewayPlaintext)).toBe(
        'true',
      );
      expect(problems).toEqual([]);
    });

    it('lets only agents reach the gateway, only the proxies its internal port, only the Argo CD server the proxies', () => {
      const x = r(dir);
      const gateway = x.configs.get('argocd-agent-principal/stream-gateway')!;
      const allowed = (app: string, port: number): string[] => {
        if (overlay.mesh === 'istio') {
          const w = get(x.objects, 'Deployment', app);
          return byKind(x.objects, 'AuthorizationPolicy')
            .filter((ap) => selects(ap.spec.selector, podOf(w).metadata.labels))
            .flatMap((ap) => {
              expect(ap.spec.action ?? 'ALLOW').toBe('ALLOW');
              return ap.spec.rules ?? [];
            })
            .filter((rule: { to?: Array<{ operation: { ports?: string[] } }> }) =>
              rule.to?.some((t) => t.operation.ports?.includes(String(port))),
            )
            .flatMap((rule: { from: Array<{ source: { principals: string[] } }> }) =>
              rule.from.flatMap((f) => f.source.principals),
            )
            .map((p: string) => p.split('/sa/')[1]!)
            .sort();
        }
        const w = get(x.objects, 'Deployment', app);
        const servers = byKind(x.objects, 'Server').filter(
          (s) =>
            selects(s.spec.podSelector, podOf(w).metadata.labels) &&
            containerPort(podOf(w).spec, s.spec.port) === port,
        );
        return byKind(x.objects, 'AuthorizationPolicy')
          .filter((ap) => servers.some((s) => s.metadata.name === ap.spec.targetRef.name))
          .flatMap((ap) =>
            ap.spec.requiredAuthenticationRefs.map((ref: { name: string }) =>
              get(x.objects, 'MeshTLSAuthentication', ref.name),
            ),
          )
          .flatMap((m: K8sObject) => [
            ...(m.spec.identities ?? []).map((i: string) => i.split('.')[0]),
            ...(m.spec.identityRefs ?? []).map((i: { name: string }) => i.name),
          ])
          .sort();
      };
      expect(allowed('argocd-agent-principal', gateway.config.listenPort)).toEqual(['agent-example']);
      expect(allowed('argocd-agent-principal', gateway.config.internalListenPort)).toEqual(
        [...gateway.config.internalAllowedClients].sort(),
      );
      expect(allowed('argocd-agent-resource-proxy', 9090)).toEqual(
        meshCallers('resource-proxy', 'api').sort(),
      );
      expect(allowed('argocd-agent-redis-proxy', 6379)).toEqual(meshCallers('redis-proxy', 'redis').sort());
      expect(allowed('argocd-agent-extension-proxy', 8090)).toEqual(
        meshCallers('extension-proxy', 'api').sort(),
      );
      // The proxies' service accounts are the identities the gateway admits internally.
      for (const sa of gateway.config.internalAllowedClients)
        expect(find(x.objects, 'ServiceAccount', sa)).toBeTruthy();
      if (overlay.mesh === 'istio') {
        const pa = byKind(x.objects, 'PeerAuthentication');
        expect(pa.map((p) => p.spec.mtls.mode)).toEqual(['STRICT']);
        for (const w of workloads(x.objects))
          expect(selects(pa[0]!.spec.selector, podOf(w).metadata.labels)).toBe(true);
        for (const host of ['argocd-agent-principal', 'argocd-agent-principal-internal']) {
          const dr = byKind(x.objects, 'DestinationRule').find((d) => d.spec.host === host);
          expect(dr?.spec.trafficPolicy).toEqual({
            connectionPool: { http: { idleTimeout: '300s' } },
            tls: { mode: 'ISTIO_MUTUAL' },
          });
          expect(find(x.objects, 'Service', host)).toBeTruthy();
        }
        // gRPC/HTTP ports are declared as such, or the sidecar adds no identity header.
        const proto = (svc: string) => get(x.objects, 'Service', svc).spec.ports[0].appProtocol;
        expect([
          proto('argocd-agent-principal'),
          proto('argocd-agent-principal-internal'),
          proto('argocd-agent-resource-proxy'),
        ]).toEqual(['grpc', 'grpc', 'http']);
      } else {
        // NATS speaks first: opaque to Linkerd on the pods and the Services.
        const sts = get(x.objects, 'StatefulSet', 'argocd-agent-nats');
        expect(podOf(sts).metadata.annotations?.['config.linkerd.io/opaque-ports']).toBe('4222,6222');
        expect(
          get(x.objects, 'Service', 'argocd-agent-nats').metadata.annotations?.[
            'config.linkerd.io/opaque-ports'
          ],
        ).toBe('4222');
      }
    });
  }

  if (overlay.side === 'agent') {
    it('runs one agent that reaches the principal the way its overlay says', () => {
      const x = r(dir);
      const d = get(x.objects, 'Deployment', 'argocd-agent-agent');
      expect(d.spec.replicas).toBe(1);
      const agent = x.configs.get('argocd-agent-agent/agent')!;
      // The gateway's agent port, or OpenShift's router in front of it.
      expect(agent.config.serverPort).toBe(overlay.openshift ? 443 : 8443);
      expect(agent.config.namespace).toBe('argocd');
      const egress = get(x.objects, 'NetworkPolicy', 'argocd-agent-agent').spec.egress.flatMap(
        (e: { ports: Array<{ port: number }> }) => e.ports.map((p) => p.port),
      );
      expect(egress).toContain(agent.config.serverPort);
      const sa = podOf(d).spec.serviceAccountName;
      if (overlay.mesh === 'none') {
        expect(agent.config.creds).toBe('mtls:');
        expect(agent.config.insecureTls).toBe(false);
        expect(agent.config.tlsClientCert).toBeTruthy();
        expect(sa).toBe('argocd-agent-agent');
      } else {
        expect(agent.config.creds).toBe('header:');
        expect(agent.config.insecureTls).toBe(true);
        expect(agent.config.heartbeatInterval).toBeLessThanOrEqual(30_000);
        // The principal takes the agent's name from its service account.
        expect(sa).toBe('agent-example');
        expect(agent.config.serverAddress).toMatch(
          /^argocd-agent-principal[-a-z]*\.argocd\.svc\.cluster\.local$/,
        );
        if (overlay.mesh === 'istio') {
          const dr = byKind(x.objects, 'DestinationRule').find(
            (dd) => dd.spec.host === agent.config.serverAddress,
          );
          expect(dr?.spec.trafficPolicy?.tls?.mode).toBe('ISTIO_MUTUAL');
          const idle = Number.parseInt(dr?.spec.trafficPolicy?.connectionPool?.http?.idleTimeout, 10) * 1000;
          expect(agent.config.heartbeatInterval).toBeLessThan(idle);
        }
      }
      const roles = byKind(x.objects, 'ClusterRole').map((c) => c.metadata.name);
      expect(roles).toEqual(
        dir.includes('enhanced') ? ['argocd-agent-agent', 'argocd-agent-enhanced'] : ['argocd-agent-agent'],
      );
      const ns = get(x.objects, 'ClusterRole', 'argocd-agent-agent').rules;
      expect(ns).toEqual([{ apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] }]);
    });

    it("reads Argo CD's Redis password only if its Secret exists (a cluster without Argo CD has none)", () => {
      const x = r(dir);
      const d = get(x.objects, 'Deployment', 'argocd-agent-agent');
      const env = containersOf(d)[0]!.env.find((e: { name: string }) => e.name === 'REDIS_PASSWORD');
      expect(env?.valueFrom?.secretKeyRef).toEqual({ name: 'argocd-redis', key: 'auth', optional: true });
    });

    it('grants exec, attach and port-forward wherever the agent may serve them', () => {
      const x = r(dir);
      const agent = x.configs.get('argocd-agent-agent/agent')!;
      const grants = (sub: string, verb: string) =>
        byKind(x.objects, 'ClusterRole').some((c) =>
          (c.rules ?? []).some(
            (rule: { apiGroups: string[]; resources: string[]; verbs: string[] }) =>
              rule.apiGroups.includes('') && rule.resources.includes(sub) && rule.verbs.includes(verb),
          ),
        );
      const subresources = ['pods/exec', 'pods/attach', 'pods/portforward'];
      // Off in the base params: an overlay turns it on together with the enhanced RBAC.
      if (agent.config.enableExec) for (const s of subresources) expect(grants(s, 'create')).toBe(true);
      if (dir.includes('enhanced'))
        for (const s of subresources)
          expect([s, grants(s, 'get'), grants(s, 'create')]).toEqual([s, true, true]);
      else expect(agent.config.enableExec).toBe(false);
    });
  }

  if (overlay.side === 'argocd') {
    it('points the Argo CD server at the redis proxy Service', () => {
      const cm = get(r(dir).objects, 'ConfigMap', 'argocd-cmd-params-cm');
      const svc = get(r('base/principal').objects, 'Service', 'argocd-agent-redis-proxy');
      expect(cm.data['redis.server']).toBe(`${svc.metadata.name}:${svc.spec.ports[0].port}`);
      expect(cm.data['server.insecure']).toBe('false');
    });
  }
});

/** The service accounts of a listener's callers (agreement.ts says who they are; Argo CD names its service accounts after its components). */
function meshCallers(app: string, listener: string): string[] {
  const { who } = callersOf(app, listener, podsOf(CLUSTER), []);
  if (who === 'anyone') throw new Error(`${app} ${listener}: callers are not named`);
  return who.map((p) => p.labels['app.kubernetes.io/name']!);
}

/** The identity a pinned mesh auth method extracts for a sidecar-shaped header, or undefined. */
function meshAdmits(
  mesh: 'istio' | 'linkerd',
  method: AuthMethod,
  sa: string,
  namespace: string,
  trustDomain: string,
): string | undefined {
  if (method.kind !== 'header') throw new Error(`${method.spec} is not a mesh identity method`);
  const headers =
    mesh === 'istio'
      ? {
          'x-forwarded-client-cert': `By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-principal;URI=spiffe://${trustDomain}/ns/${namespace}/sa/${sa}`,
        }
      : { 'l5d-client-id': `${sa}.${namespace}.serviceaccount.identity.linkerd.${trustDomain}` };
  const result = extractHeaderIdentity(method, headers);
  return result.ok ? result.identity.agent : undefined;
}

describe('mesh overlays across clusters', () => {
  it.each(['istio', 'linkerd'])('%s: the agent overlay identity is one the principal admits', (mesh) => {
    const agent = r(`${mesh}/agent`);
    const principal = r(`${mesh}/principal`);
    const sa = get(agent.objects, 'Deployment', 'argocd-agent-agent').spec.template.spec
      .serviceAccountName as string;
    const ns = get(agent.objects, 'Deployment', 'argocd-agent-agent').metadata.namespace;
    if (ns === undefined) throw new Error('the agent Deployment carries no namespace');
    const ids =
      mesh === 'istio'
        ? byKind(principal.objects, 'AuthorizationPolicy').flatMap((ap) =>
            (ap.spec.rules ?? []).flatMap((rule: { from: Array<{ source: { principals: string[] } }> }) =>
              rule.from.flatMap((f) => f.source.principals),
            ),
          )
        : (get(principal.objects, 'MeshTLSAuthentication', 'argocd-agent-agents').spec
            .identities as string[]);
    const want =
      mesh === 'istio'
        ? `cluster.local/ns/${ns}/sa/${sa}`
        : `${sa}.${ns}.serviceaccount.identity.linkerd.cluster.local`;
    expect(ids).toContain(want);
    // The gateway itself admits it too (namespace and trust domain pinned in its params).
    const gateway = principal.configs.get('argocd-agent-principal/stream-gateway')!;
    expect(
      meshAdmits(
        mesh as 'istio' | 'linkerd',
        agentAuthMethod(gateway.config as never),
        sa,
        ns,
        'cluster.local',
      ),
    ).toBe(sa);
  });
});

describe('deploy/argocd/extensions', () => {
  it('turns proxy extensions on and points every extension at the extension proxy under its own name', () => {
    const x = r('test/fixtures/argocd-extensions');
    expect(get(x.objects, 'ConfigMap', 'argocd-cmd-params-cm').data['server.enable.proxy.extension']).toBe(
      'true',
    );
    const cm = get(x.objects, 'ConfigMap', 'argocd-cm').data as Record<string, string>;
    const parsed = parseArgocdExtensionConfig(cm);
    expect(parsed.problems).toEqual([]);
    expect(parsed.extensions.length).toBeGreaterThan(0);
    const service = get(r('base/principal').objects, 'Service', 'argocd-agent-extension-proxy');
    for (const ext of parsed.extensions) {
      expect(ext.services).toHaveLength(1);
      const url = new URL(ext.services[0]!.url);
      expect(url.hostname).toBe(service.metadata.name);
      expect(Number(url.port)).toBe(service.spec.ports[0].port);
      expect(url.pathname).toBe(`/${ext.name}`);
    }
  });
});
