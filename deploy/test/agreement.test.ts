// The bundles agree with the services they run, read as a platform engineer installs them: each
// pullplane container's flags, env and params file are loaded by its app's own loader
// (support/apps.ts), and what that configuration makes the service read, dial and serve is held
// to the rendered manifests, the install guide's Secret tables (deploy/README.md, or
// `pullplane migrate`'s MIGRATION.md for its output) and the NetworkPolicies at both ends of each
// connection, with Argo CD's own pods and policies (test/fixtures/cluster) around them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callersOf,
  dialProblems,
  dials,
  fileProblems,
  fileReads,
  listenerProblems,
  objectKeys,
  provided,
  SCRAPER,
} from './support/agreement.js';
import { removeScratch } from './support/apps.js';
import { documented } from './support/install-guide.js';
import { CLUSTER as cluster, podsOf } from './support/network.js';
import { configsOf, containersOf, OVERLAYS, type Rendered, renderAll } from './support/overlays.js';
import { workloads } from './support/render.js';

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

const installed = Object.entries(OVERLAYS).filter(([, o]) => o.side !== 'argocd');

describe.each(installed)('%s agrees with its services', (dir, overlay) => {
  it('reads every file from a Secret or ConfigMap key the bundle renders or the install guide lists', () => {
    const x = r(dir);
    const docs = documented(overlay.guides);
    const problems: string[] = [];
    let reads = 0;
    for (const w of workloads(x.objects)) {
      for (const c of containersOf(w)) {
        const cfg = x.configs.get(`${w.metadata.name}/${c.name}`);
        if (!cfg) continue;
        const list = fileReads(cfg);
        reads += list.length;
        problems.push(...fileProblems(`${w.metadata.name}/${c.name}`, w, c, list, x.objects, docs));
      }
    }
    expect(reads).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it("lists every Secret (and every ConfigMap it does not render) its pods take in the overlay's install guide", () => {
    const x = r(dir);
    const docs = documented(overlay.guides);
    const refs = workloads(x.objects).flatMap(objectKeys);
    expect(refs.some((k) => k.kind === 'Secret')).toBe(true);
    const problems = refs
      .map((k) => provided(k, x.objects, docs))
      .filter((p): p is string => p !== undefined);
    expect([...new Set(problems)]).toEqual([]);
  });

  it('admits every address its services dial, by the egress rules of their pods and the ingress rules of the pods they reach', () => {
    const x = r(dir);
    const objects = [...x.objects, ...cluster];
    const pods = podsOf(objects);
    const gateway = [...x.configs.values()].find((c) => c.app === 'stream-gateway');
    const problems: string[] = [];
    let count = 0;
    for (const w of workloads(x.objects)) {
      const source = pods.find((p) => p.name === w.metadata.name && p.namespace === w.metadata.namespace)!;
      for (const cfg of configsOf(x, w)) {
        const list = dials(cfg, w.spec.template.spec, gateway?.config.internalListenPort);
        count += list.length;
        const container = containersOf(w).find(
          (cc) => x.configs.get(`${w.metadata.name}/${cc.name}`) === cfg,
        );
        problems.push(
          ...dialProblems(`${w.metadata.name}/${cfg.app}`, source, list, objects, pods, {
            config: cfg,
            container,
          }),
        );
      }
    }
    expect(count).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('admits each listener to its callers and to nobody else, and metrics to scrapers', () => {
    const x = r(dir);
    const objects = [...x.objects, ...cluster];
    const pods = podsOf(objects);
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    const proxies = workloads(x.objects)
      .filter((w) =>
        configsOf(x, w).some((c) => (c.spec.options ?? []).some((o) => o.flag === 'gateway-server-name')),
      )
      .map((w) => pods.find((p) => p.name === w.metadata.name)!);
    const problems: string[] = [];
    for (const w of workloads(x.objects)) {
      const target = pods.find((p) => p.name === w.metadata.name && p.namespace === w.metadata.namespace)!;
      for (const cfg of configsOf(x, w)) {
        for (const l of cfg.listeners)
          problems.push(
            ...listenerProblems(
              `${w.metadata.name} ${l.name}`,
              target,
              l.port,
              callersOf(cfg.app, l.name, pods, proxies),
              policies,
              l,
            ),
          );
        problems.push(
          ...listenerProblems(
            `${w.metadata.name} metrics`,
            target,
            cfg.metricsPort,
            { who: [SCRAPER], presents: [] },
            policies,
            undefined,
            false,
          ),
        );
      }
    }
    expect(problems).toEqual([]);
  });
});
