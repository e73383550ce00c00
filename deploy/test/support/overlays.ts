// Every kustomization under deploy/ that renders on its own, what it installs, and which install
// guide documents what it needs; rendered once per test file, with each pullplane container's
// configuration loaded by its app's own loader (support/apps.ts).
import { type ContainerConfig, containerConfig, IMAGE } from './apps.js';
import type { GuideRef } from './install-guide.js';
import { type K8sObject, render, workloads } from './render.js';

export type Mesh = 'none' | 'istio' | 'linkerd';

export interface Overlay {
  side: 'principal' | 'agent' | 'argocd';
  mesh: Mesh;
  externalNats?: boolean;
  /** Built for OpenShift (Routes, IDs from the namespace's ranges). */
  openshift?: boolean;
  /**
   * Where an operator reads which Secrets (and ConfigMaps) to create for it: the first guide
   * that lists an object wins, so `pullplane migrate`'s report overrides the install guide for the
   * Secrets argocd-agent already has.
   */
  guides: GuideRef[];
}

const README = 'README.md';
const plainPrincipal: GuideRef = { file: README, heading: 'Principal Secrets (plain mTLS)' };
const plainAgent: GuideRef = { file: README, heading: 'Workload-cluster Secrets (plain mTLS)' };
const meshPrincipal: GuideRef = { file: README, heading: 'Principal Secrets (mesh)' };
const meshAgent: GuideRef = { file: README, heading: 'Workload-cluster Secrets (mesh)' };
const migrated = (side: string): GuideRef => ({
  file: 'test/fixtures/migrated/MIGRATION.md',
  heading: new RegExp(`^${side} \\(namespace `),
});

export const OVERLAYS: Record<string, Overlay> = {
  'base/principal': { side: 'principal', mesh: 'none', guides: [plainPrincipal] },
  'base/agent': { side: 'agent', mesh: 'none', guides: [plainAgent] },
  'istio/principal': { side: 'principal', mesh: 'istio', guides: [meshPrincipal] },
  'istio/agent': { side: 'agent', mesh: 'istio', guides: [meshAgent] },
  'linkerd/principal': { side: 'principal', mesh: 'linkerd', guides: [meshPrincipal] },
  'linkerd/agent': { side: 'agent', mesh: 'linkerd', guides: [meshAgent] },
  'openshift/principal': { side: 'principal', mesh: 'none', openshift: true, guides: [plainPrincipal] },
  'openshift/agent': { side: 'agent', mesh: 'none', openshift: true, guides: [plainAgent] },
  'examples/principal-external-nats': {
    side: 'principal',
    mesh: 'none',
    externalNats: true,
    guides: [plainPrincipal],
  },
  'examples/principal-servicemonitor': { side: 'principal', mesh: 'none', guides: [plainPrincipal] },
  'examples/principal-monitoring': { side: 'principal', mesh: 'none', guides: [plainPrincipal] },
  'examples/agent-enhanced-rbac': { side: 'agent', mesh: 'none', guides: [plainAgent] },
  'test/fixtures/argocd': { side: 'argocd', mesh: 'none', guides: [] },
  // `pullplane migrate`'s output for an argocd-agent installation (apps/cli/test/migrate.test.ts keeps it current).
  'test/fixtures/migrated/principal': {
    side: 'principal',
    mesh: 'none',
    guides: [migrated('principal'), plainPrincipal],
  },
  'test/fixtures/migrated/agent': { side: 'agent', mesh: 'none', guides: [migrated('agent'), plainAgent] },
  'test/fixtures/argocd-redis-tls': { side: 'argocd', mesh: 'none', guides: [] },
  'test/fixtures/argocd-extensions': { side: 'argocd', mesh: 'none', guides: [] },
};

export interface Rendered {
  objects: K8sObject[];
  /** workload name/container name → its loaded configuration (pullplane containers only). */
  configs: Map<string, ContainerConfig>;
}

/** Renders every overlay and loads each pullplane container's configuration. */
export async function renderAll(): Promise<Map<string, Rendered>> {
  const rendered = new Map<string, Rendered>();
  await Promise.all(
    Object.keys(OVERLAYS).map(async (dir) => {
      const objects = await render(dir);
      const configs = new Map<string, ContainerConfig>();
      for (const w of workloads(objects)) {
        for (const c of w.spec.template.spec.containers ?? []) {
          if (IMAGE.test(c.image))
            configs.set(`${w.metadata.name}/${c.name}`, await containerConfig(objects, w, c));
        }
      }
      rendered.set(dir, { objects, configs });
    }),
  );
  return rendered;
}

/** Pod template of a workload. */
export const podOf = (w: K8sObject) =>
  w.spec.template as { metadata: K8sObject['metadata']; spec: K8sObject['spec'] };
export const containersOf = (w: K8sObject): K8sObject['spec'][] => podOf(w).spec.containers ?? [];
/** The loaded configurations of a workload's pullplane containers. */
export const configsOf = (x: Rendered, w: K8sObject) =>
  containersOf(w)
    .map((c) => x.configs.get(`${w.metadata.name}/${c.name}`))
    .filter((c): c is ContainerConfig => c !== undefined);
