import { credentials, Metadata, status } from '@grpc/grpc-js';
import { loadConfig } from '@pullplane/config';
import { gatewayStartupWarnings, validateGatewayConfig } from '@pullplane/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../src/options.js';
import { dial, startGateway } from './in-process.js';
import { linkOnce, spawnApp } from './support.js';

// Issue 8, items 4 and 5: mesh identities are pinned to the agents' (and proxies')
// namespaces and trust domain, and an ambiguous XFCC element names nobody.
const XFCC = 'x-forwarded-client-cert';
const L5D = 'l5d-client-id';
const md = (name: string, value: string) => {
  const m = new Metadata();
  m.set(name, value);
  return m;
};
const sidecar = (uri: string) => `By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-principal;URI=${uri}`;
const pinned = [
  '--insecure-plaintext',
  '--mesh-trust-domain=cluster.local',
  '--mesh-agent-namespaces=agents',
  '--internal-mesh-namespaces=argocd',
  '--internal-allowed-clients=argocd-agent-resource-proxy',
];

let istio: Awaited<ReturnType<typeof startGateway>>;
let linkerd: Awaited<ReturnType<typeof startGateway>>;
beforeAll(async () => {
  istio = await startGateway([...pinned, '--auth=istio', '--internal-auth=istio']);
  linkerd = await startGateway([...pinned, '--auth=linkerd', '--internal-auth=linkerd']);
});
afterAll(async () => {
  await istio?.app.stop();
  await linkerd?.app.stop();
});

const refusal = (gw: typeof istio, agentlessCode: string) =>
  gw.log.lines.filter((l) => l.msg === 'agent authentication failed' && l.code === agentlessCode);

describe('--auth=istio, pinned', () => {
  it('admits a service account of the agents namespace in the trust domain', async () => {
    const out = await dial(
      istio.port,
      undefined,
      md(XFCC, sidecar('spiffe://cluster.local/ns/agents/sa/agent-a')),
    );
    expect(out.welcome?.kind.case).toBe('welcome');
  });

  it.each([
    ['another trust domain', 'spiffe://evil.example/ns/agents/sa/agent-a'],
    ['kube-system', 'spiffe://cluster.local/ns/kube-system/sa/default'],
    ["the proxies' namespace", 'spiffe://cluster.local/ns/argocd/sa/agent-b'],
  ])('refuses %s', async (_what, uri) => {
    const before = refusal(istio, 'AUTH_NO_MATCH').length;
    const out = await dial(istio.port, undefined, md(XFCC, sidecar(uri)));
    expect(out.welcome).toBeUndefined();
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
    expect(refusal(istio, 'AUTH_NO_MATCH').length).toBe(before + 1);
  });

  it('refuses an XFCC element with two URIs, in either order', async () => {
    for (const [a, b] of [
      ['agent-a', 'evil'],
      ['evil', 'agent-a'],
    ]) {
      const value = `${sidecar(`spiffe://cluster.local/ns/agents/sa/${a}`)};URI=spiffe://cluster.local/ns/agents/sa/${b}`;
      const out = await dial(istio.port, undefined, md(XFCC, value));
      expect(out.error?.code).toBe(status.UNAUTHENTICATED);
      expect(out.error?.details).toMatch(/carries 2 URIs .*exactly one is required/);
    }
    expect(refusal(istio, 'AUTH_XFCC_AMBIGUOUS')).toHaveLength(2);
  });

  it("refuses an agent that takes a proxy's name", async () => {
    const out = await dial(
      istio.port,
      undefined,
      md(XFCC, sidecar('spiffe://cluster.local/ns/agents/sa/argocd-agent-resource-proxy')),
    );
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
    expect(out.error?.details).toMatch(/is the name of an internal client, not an agent/);
  });

  it('admits on the internal listener only the allowed proxies of the pinned namespace', async () => {
    const internal = `127.0.0.1:${istio.app.gateway!.internalPort}`;
    const call = (uri: string) =>
      linkOnce(internal, credentials.createInsecure(), 'agent-a', '/', md(XFCC, sidecar(uri)));
    // An agent's identity, even with a proxy's service account name, is not a proxy.
    const agentNs = await call('spiffe://cluster.local/ns/agents/sa/argocd-agent-resource-proxy');
    expect(agentNs.error?.code).toBe(status.UNAUTHENTICATED);
    const foreign = await call('spiffe://evil.example/ns/argocd/sa/argocd-agent-resource-proxy');
    expect(foreign.error?.code).toBe(status.UNAUTHENTICATED);
    const notAllowed = await call('spiffe://cluster.local/ns/argocd/sa/argocd-server');
    expect(notAllowed.error?.code).toBe(status.PERMISSION_DENIED);
    const proxy = await call('spiffe://cluster.local/ns/argocd/sa/argocd-agent-resource-proxy');
    // Authenticated and allowed: the agent is connected, so the stream is accepted.
    expect(proxy.error).toBeUndefined();
  });
});

describe('--auth=linkerd, pinned', () => {
  it.each([
    ['kube-system', 'default.kube-system.serviceaccount.identity.linkerd.cluster.local'],
    ['another trust domain', 'agent-a.agents.serviceaccount.identity.linkerd.evil.example'],
  ])('refuses %s', async (_what, id) => {
    const out = await dial(linkerd.port, undefined, md(L5D, id));
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
  });

  it('admits an agent of the agents namespace', async () => {
    const out = await dial(
      linkerd.port,
      undefined,
      md(L5D, 'agent-a.agents.serviceaccount.identity.linkerd.cluster.local'),
    );
    expect(out.welcome?.kind.case).toBe('welcome');
  });
});

describe('configuration', () => {
  const problems = (argv: string[]) =>
    validateGatewayConfig(
      loadConfig(gatewayOptions, { argv: ['--insecure-plaintext', '--nats-insecure', ...argv], env: {} })
        .config,
    );

  it('refuses a preset without the trust domain and namespaces, naming the flags', async () => {
    expect(
      problems(['--auth=linkerd', '--internal-auth=linkerd', '--internal-allowed-clients=p']).join('\n'),
    ).toMatch(
      /--auth=linkerd admits any workload.*--mesh-trust-domain and --mesh-agent-namespaces[\s\S]*--internal-auth=linkerd admits any workload.*--internal-mesh-namespaces/,
    );
    // The process refuses to start, exit code 2.
    const app = spawnApp('stream-gateway', [
      '--insecure-plaintext',
      '--listen-host=127.0.0.1',
      '--auth=istio',
      '--internal-auth=header:x-caller:^([a-z-]+)$',
      '--internal-allowed-clients=p',
      '--nats-url=nats://127.0.0.1:1',
      '--nats-insecure',
      '--metrics-port=0',
      '--healthz-port=0',
    ]);
    expect(await app.exited).toBe(2);
    expect(app.logs.join('\n')).toMatch(
      /--auth=istio admits any workload.*set --mesh-trust-domain and --mesh-agent-namespaces/,
    );
  });

  it('requires the proxies allow-list for a mesh identity on the internal listener', () => {
    expect(
      problems([
        '--auth=istio',
        '--internal-auth=istio',
        '--mesh-trust-domain=cluster.local',
        '--mesh-agent-namespaces=agents',
        '--internal-mesh-namespaces=argocd',
      ]).join('\n'),
    ).toMatch(/needs --internal-allowed-clients/);
  });

  it("takes an explicit header regex as given, with a warning when it is the seed's unpinned one", () => {
    const argv = [
      '--insecure-plaintext',
      '--listen-host=127.0.0.1',
      '--auth=header:x-forwarded-client-cert:^.*URI=spiffe://[^/]+/ns/[^/]+/sa/([^,;]+)',
      '--internal-auth=header:x-forwarded-client-cert:^URI=spiffe://cluster\\.local/ns/argocd/sa/([^/]+)$',
      '--internal-allowed-clients=p',
      '--nats-insecure',
    ];
    const { config } = loadConfig(gatewayOptions, { argv, env: {} });
    expect(validateGatewayConfig(config)).toEqual([]);
    const warnings = gatewayStartupWarnings(config);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^--auth=header:.* accepts identities from any trust domain and namespace/);
  });
});
