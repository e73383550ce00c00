// OpenShift: every pod of every bundle is evaluated against the restricted-v2 SCC
// (support/scc.ts states the rules), and the pods of pullplane's images are also kept free of
// fixed IDs, so one manifest runs on OpenShift and on plain Kubernetes alike. The bundled NATS
// (an upstream image that runs as root, with a volume only an fsGroup makes writable) needs fixed
// IDs on plain Kubernetes: it is the only pod restricted-v2 refuses outside deploy/openshift, for
// exactly that reason. The openshift overlays' Routes reach TLS listeners by passthrough.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE, removeScratch } from './support/apps.js';
import { configsOf, containersOf, OVERLAYS, type Rendered, renderAll } from './support/overlays.js';
import { byKind, containerPort, get, selects, workloads } from './support/render.js';
import { podTemplate, portabilityProblems, refusals } from './support/scc.js';

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

/** The bundles pullplane ships (the argocd fixtures stand for Argo CD's own manifests). */
const bundles = Object.entries(OVERLAYS).filter(([, o]) => o.side !== 'argocd');

describe.each(bundles)('%s on OpenShift', (dir, overlay) => {
  it('is admitted by the restricted-v2 SCC, pod by pod (the bundled NATS only where the overlay is for OpenShift)', () => {
    const refused: Record<string, string[]> = {};
    const workloadsOf = workloads(r(dir).objects);
    expect(workloadsOf.length).toBeGreaterThan(0);
    for (const w of workloadsOf) {
      const why = refusals(podTemplate(w));
      if (why.length > 0) refused[`${w.kind}/${w.metadata.name}`] = why;
    }
    const nats = workloadsOf.some((w) => w.metadata.name === 'argocd-agent-nats');
    expect(refused).toEqual(
      overlay.openshift || !nats
        ? {}
        : {
            'StatefulSet/argocd-agent-nats': [
              "fsGroup 1000 is outside the namespace's range 1000680000/10000",
              "runAsUser 1000 is outside the namespace's range 1000680000/10000",
            ],
          },
    );
  });

  it("keeps pullplane's pods portable: no fixed UID, group or fsGroup, non-root, RuntimeDefault, no escalation, no capabilities, read-only root", () => {
    const problems: string[] = [];
    for (const w of workloads(r(dir).objects)) {
      const ours = containersOf(w).every((c) => IMAGE.test(c.image));
      if (!ours && !overlay.openshift) continue;
      problems.push(...portabilityProblems(podTemplate(w)).map((p) => `${w.metadata.name}: ${p}`));
    }
    expect(problems).toEqual([]);
  });
});

describe('deploy/openshift', () => {
  it('routes to TLS listeners by passthrough, through Services that reach them', () => {
    const x = r('openshift/principal');
    const routes = byKind(x.objects, 'Route');
    expect(routes.map((rt) => rt.metadata.name).sort()).toEqual([
      'argocd-agent-principal',
      'argocd-agent-resource-proxy',
    ]);
    for (const rt of routes) {
      const svc = get(x.objects, 'Service', rt.spec.to.name);
      const sp = svc.spec.ports.find(
        (p: { name: string; port: number }) =>
          p.name === rt.spec.port.targetPort || p.port === rt.spec.port.targetPort,
      );
      expect(sp, `${rt.metadata.name}: no Service port ${rt.spec.port.targetPort}`).toBeTruthy();
      const w = workloads(x.objects).find((ww) =>
        selects(svc.spec.selector, ww.spec.template.metadata.labels),
      )!;
      const port = containerPort(w.spec.template.spec, sp.targetPort);
      const listener = configsOf(x, w)
        .flatMap((c) => c.listeners)
        .find((l) => l.port === port);
      // mTLS end to end: the router must not terminate what the service authenticates.
      expect([rt.metadata.name, listener?.plaintext, rt.spec.tls.termination]).toEqual([
        rt.metadata.name,
        false,
        'passthrough',
      ]);
    }
    // Agents come in through the Route, not a load balancer.
    expect(get(x.objects, 'Service', 'argocd-agent-principal').spec.type).toBe('ClusterIP');
  });

  it('points the agent at the gateway Route, on the port the router listens on', () => {
    const gatewayRoute = get(r('openshift/principal').objects, 'Route', 'argocd-agent-principal');
    const agent = r('openshift/agent').configs.get('argocd-agent-agent/agent')!;
    expect([agent.config.serverAddress, agent.config.serverPort]).toEqual([gatewayRoute.spec.host, 443]);
  });
});
