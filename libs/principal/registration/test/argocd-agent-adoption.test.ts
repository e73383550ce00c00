import { CoreV1Api, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRegistrar, type ClusterRegistrarOptions, fingerprint } from '../src/index.js';

let api: FakeKubeApiServer;
let kc: KubeConfig;
let core: CoreV1Api;
beforeAll(async () => {
  api = await startFakeKubeApiServer();
  kc = new KubeConfig();
  kc.loadFromString(api.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
});
afterAll(() => api.close());

const b64 = (s: string) => Buffer.from(s).toString('base64');
const decode = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
let issued = 0;
function registrar(over: Partial<ClusterRegistrarOptions> = {}): ClusterRegistrar {
  return new ClusterRegistrar({
    kubeConfig: kc,
    namespace: 'argocd',
    serverFor: (agent) => `https://argocd-agent-resource-proxy:9090/clusters/${agent}`,
    credentialsFor: async (agent) => ({
      bearerToken: `token-${agent}-${++issued}`,
      expiresAt: new Date(Date.now() + 3_600_000),
    }),
    refreshBeforeMs: 1_200_000,
    fingerprint: fingerprint('key-1'),
    logger: pino({ level: 'silent' }),
    adoptArgocdAgentSecrets: true,
    ...over,
  });
}

/** A cluster Secret as argocd-agentctl writes it: a per-agent client certificate, no credential kind. */
async function argocdAgentSecret(name: string, agent: string, extra: Record<string, string> = {}) {
  await core.createNamespacedSecret({
    namespace: 'argocd',
    body: {
      metadata: {
        name,
        namespace: 'argocd',
        labels: {
          'argocd.argoproj.io/secret-type': 'cluster',
          'argocd-agent.argoproj-labs.io/agent-name': agent,
        },
        annotations: { 'team.example/owner': 'platform' },
      },
      data: {
        name: b64(agent),
        server: b64(`https://argocd-agent-resource-proxy:9090?agentName=${agent}`),
        config: b64(
          JSON.stringify({
            tlsClientConfig: { certData: b64('CERT'), keyData: b64('KEY'), caData: b64('THEIR-CA') },
          }),
        ),
        ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, b64(v)])),
      },
    },
  });
}
const read = (name: string) => core.readNamespacedSecret({ name, namespace: 'argocd' });
const config = (s: V1Secret) =>
  JSON.parse(decode(s.data?.config)) as { bearerToken?: string; tlsClientConfig: Record<string, unknown> };

describe("adopting argocd-agent's cluster Secrets", () => {
  it('rewrites the credentials to a caller token, dropping the unmarked certificate, and keeps name, server and labels', async () => {
    await argocdAgentSecret('cluster-east', 'east', { project: 'prod' });
    expect(await registrar().ensure('east')).toBe('adopted');
    const s = await read('cluster-east');
    expect(s.metadata?.labels).toMatchObject({
      'argocd.argoproj.io/secret-type': 'cluster',
      'argocd-agent.argoproj-labs.io/agent-name': 'east',
      'pullplane.io/agent-name': 'east',
      'app.kubernetes.io/managed-by': 'pullplane',
    });
    expect(s.metadata?.annotations).toMatchObject({
      'team.example/owner': 'platform',
      'pullplane.io/adopted-from': 'argocd-agent',
    });
    expect(decode(s.data?.server)).toBe('https://argocd-agent-resource-proxy:9090?agentName=east');
    expect(decode(s.data?.project)).toBe('prod');
    const c = config(s);
    expect(c.bearerToken).toMatch(/^token-east-/);
    expect(c.tlsClientConfig).toEqual({ insecure: false, caData: b64('THEIR-CA') });
  });

  it('keeps the adopted name and server on later rotations, and leaves a current Secret alone', async () => {
    const before = config(await read('cluster-east')).bearerToken;
    expect(await registrar().ensure('east')).toBe('unchanged');
    expect(await registrar({ fingerprint: fingerprint('key-2') }).ensure('east')).toBe('updated');
    const s = await read('cluster-east');
    expect(config(s).bearerToken).not.toBe(before);
    expect(decode(s.data?.server)).toBe('https://argocd-agent-resource-proxy:9090?agentName=east');
    expect(s.metadata?.annotations?.['pullplane.io/adopted-from']).toBe('argocd-agent');
  });

  it("finds a Secret by argocd-agent's label under another name, and then by ours", async () => {
    await argocdAgentSecret('my-west-cluster', 'west');
    expect(await registrar().ensure('west')).toBe('adopted');
    expect(await registrar().ensure('west')).toBe('unchanged');
    const list = await core.listNamespacedSecret({ namespace: 'argocd' });
    expect(
      list.items
        .filter((s) => s.metadata?.labels?.['pullplane.io/agent-name'] === 'west')
        .map((s) => s.metadata?.name),
    ).toEqual(['my-west-cluster']);
  });

  it('leaves argocd-agent Secrets alone without the flag, and never touches a Secret labelled for another agent', async () => {
    await argocdAgentSecret('cluster-north', 'north');
    expect(await registrar({ adoptArgocdAgentSecrets: false }).ensure('north')).toBe('foreign');
    // Named like south's, but argocd-agent labelled it for another agent: not south's to take.
    await argocdAgentSecret('cluster-south', 'elsewhere');
    expect(await registrar().ensure('south')).toBe('foreign');
    expect(config(await read('cluster-north')).tlsClientConfig.certData).toBe(b64('CERT'));
    expect(config(await read('cluster-south')).tlsClientConfig.certData).toBe(b64('CERT'));
  });
});
