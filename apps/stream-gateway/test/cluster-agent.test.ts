// Declarative onboarding: a ClusterAgent applied with kubectl in the workload cluster (the
// Kubernetes API stand-in) runs the real agent against the real gateway, which registers the
// cluster with Argo CD (a cluster Secret in the principal's API) and tells the agent, whose
// status conditions say so.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  agentServiceOptions,
  type ClusterAgentService,
  createClusterAgentService,
} from '@pullplane/agent-core';
import { AGENT_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { defineOptions, loadConfig } from '@pullplane/config';
import { opsOptions } from '@pullplane/service';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { type FakeKubeApiServer, runKubectl, startFakeKubeApiServer } from '@pullplane/testing';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startGateway } from './in-process.js';
import { makePki, silent, type TestPki } from './support.js';

const CRD = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../deploy/crds/clusteragents.pullplane.io.yaml',
);
// kubectl and two API stand-ins per test: generous on a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

const agentOptions = defineOptions([
  ...agentServiceOptions,
  ...opsOptions({ family: 'agent', metricsPort: 8181, healthzPort: 8002 }),
]);

let pki: TestPki;
let principal: FakeKubeApiServer;
let workload: FakeKubeApiServer;
let workloadKubeconfig: string;
let authority: TokenAuthority;
let gw: Awaited<ReturnType<typeof startGateway>>;
const agents: ClusterAgentService[] = [];

const kubectl = async (args: string[], input?: string) => {
  const r = await runKubectl(args, { kubeconfig: workloadKubeconfig, ...(input ? { input } : {}) });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
const b64 = (s: string) => Buffer.from(s).toString('base64');

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
/** The ClusterAgent's conditions as kubectl reads them. */
const conditions = async (name: string): Promise<Record<string, Condition>> => {
  const out = JSON.parse(await kubectl(['get', 'clusteragent', name, '-n', 'argocd', '-o', 'json'])) as {
    status?: { conditions?: Condition[] };
  };
  return Object.fromEntries((out.status?.conditions ?? []).map((c) => [c.type, c]));
};
const until = async <T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> => {
  const deadline = Date.now() + 60_000;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100)); // wait-ok: poll interval of a loop that waits for the event under a deadline
    last = await read();
  }
  return last;
};

const startAgent = async (name: string) => {
  const { config } = loadConfig(agentOptions, {
    argv: [
      `--cluster-agent=${name}`,
      `--kubeconfig=${workloadKubeconfig}`,
      '--heartbeat-interval=1s',
      '--metrics-port=0',
      '--healthz-port=0',
      '--log-level=warn',
    ],
    env: {},
  });
  const agent = createClusterAgentService(config, { logger: silent, registry: createMetricsRegistry() });
  agents.push(agent);
  await agent.start();
  return agent;
};

const clusterAgent = (name: string, agentName: string, secret: string) => `
apiVersion: pullplane.io/v1alpha1
kind: ClusterAgent
metadata:
  name: ${name}
  namespace: argocd
spec:
  server:
    address: 127.0.0.1
    port: ${gw.port}
  agentName: ${agentName}
  token:
    secretRef:
      name: ${secret}
  tls:
    rootCaSecretName: gateway-ca
`;

beforeAll(async () => {
  pki = await makePki();
  principal = await startFakeKubeApiServer();
  principal.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  workload = await startFakeKubeApiServer();
  workload.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  workloadKubeconfig = await workload.writeKubeconfig(path.join(pki.dir, 'workload.kubeconfig'));
  authority = await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE });
  const agentKey = path.join(pki.dir, 'agent-jwt.key');
  writeFileSync(agentKey, authority.exportPrivateKeyPem());
  const registrationKey = path.join(pki.dir, 'registration-jwt.key');
  writeFileSync(
    registrationKey,
    (await TokenAuthority.generate({ audience: 'resource-proxy' })).exportPrivateKeyPem(),
  );
  gw = await startGateway(
    [
      `--tls-cert=${pki.serverCert}`,
      `--tls-key=${pki.serverKey}`,
      `--root-ca-path=${pki.ca}`,
      '--auth=token',
      `--token-key-path=${agentKey}`,
      '--resource-proxy-url=https://argocd-agent-resource-proxy.argocd.svc:9090',
      `--registration-token-key-path=${registrationKey}`,
      `--registration-ca-path=${pki.ca}`,
      `--kubeconfig=${await principal.writeKubeconfig(path.join(pki.dir, 'principal.kubeconfig'))}`,
    ],
    createMemoryBus(),
  );
  await kubectl(['apply', '-f', CRD]);
  await kubectl(
    ['apply', '-f', '-'],
    `apiVersion: v1
kind: Secret
metadata: {name: gateway-ca, namespace: argocd}
data: {ca.crt: ${b64(readFileSync(pki.ca, 'utf8'))}}
`,
  );
}, 60_000);
afterAll(async () => {
  for (const a of agents) await a.stop();
  await gw?.app.stop();
  await principal?.close();
  await workload?.close();
});

it('is served like a real custom resource: kubectl applies, lists and describes ClusterAgents', async () => {
  await kubectl(['apply', '-f', '-'], clusterAgent('probe', 'probe', 'nothing'));
  const table = await kubectl(['get', 'clusteragents', '-n', 'argocd']);
  expect(table).toMatch(/^NAME\s+SERVER\s+AGENT\s+CONNECTED\s+REGISTERED\s+AGE/);
  expect(table).toMatch(/\nprobe\s+127\.0\.0\.1\s+probe\s+/);
  // The status subresource: a write to the object leaves status alone, and the reverse.
  await kubectl([
    'patch',
    'clusteragent',
    'probe',
    '-n',
    'argocd',
    '--subresource=status',
    '--type=merge',
    '-p',
    '{"status":{"conditions":[{"type":"Connected","status":"False","reason":"Test","message":"m"}]}}',
  ]);
  await kubectl(['apply', '-f', '-'], clusterAgent('probe', 'probe2', 'nothing'));
  expect((await conditions('probe')).Connected?.reason).toBe('Test');
  await kubectl(['delete', 'clusteragent', 'probe', '-n', 'argocd']);
  expect(await kubectl(['get', 'clusteragents', '-n', 'argocd', '-o', 'name'])).toBe('');
});

it('runs the agent from a ClusterAgent: it connects with its token, is registered, and says so', async () => {
  const token = await authority.issue('east', { ttlSeconds: 90 * 86_400 });
  await kubectl(
    ['apply', '-f', '-'],
    `apiVersion: v1
kind: Secret
metadata: {name: east-token, namespace: argocd}
stringData: {token: ${token}}
---
${clusterAgent('east', 'east', 'east-token')}`,
  );
  const agent = await startAgent('east');
  const c = await until(
    'Connected and Registered',
    () => conditions('east'),
    (c) => c.Connected?.status === 'True' && c.Registered?.status === 'True',
  );
  expect(c.Connected?.reason).toBe('TunnelEstablished');
  expect(c.Registered?.message).toContain('argocd/cluster-east');
  expect(c.CredentialExpiresSoon).toMatchObject({ status: 'False', reason: 'TokenValid' });
  // The cluster appears on the principal's side by itself.
  const secret = principal.store.get({
    apiVersion: 'v1',
    kind: 'Secret',
    namespace: 'argocd',
    name: 'cluster-east',
  }) as { metadata: { labels: Record<string, string> } } | undefined;
  expect(secret?.metadata.labels['argocd.argoproj.io/secret-type']).toBe('cluster');
  expect(gw.app.gateway!.session('east')).toBeDefined();
  const table = await kubectl(['get', 'clusteragents', '-n', 'argocd']);
  expect(table).toMatch(/\neast\s+127\.0\.0\.1\s+east\s+True\s+True\s+/);

  // Deleting the ClusterAgent closes the tunnel.
  await kubectl(['delete', 'clusteragent', 'east', '-n', 'argocd']);
  await until(
    'tunnel closed',
    async () => gw.app.gateway!.session('east') === undefined,
    (gone) => gone,
  );
  expect(agent.current).toBeUndefined();
});

it('says why a wrong token is refused, and that a short-lived one expires soon', async () => {
  const forger = await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE });
  const wrong = await forger.issue('west', { ttlSeconds: 3 * 86_400 });
  await kubectl(
    ['apply', '-f', '-'],
    `apiVersion: v1
kind: Secret
metadata: {name: west-token, namespace: argocd}
stringData: {token: ${wrong}}
---
${clusterAgent('west', 'west', 'west-token')}`,
  );
  await startAgent('west');
  const c = await until(
    'Connected False with a reason',
    () => conditions('west'),
    (c) => c.Connected?.reason === 'CredentialsRejected',
  );
  expect(c.Connected?.status).toBe('False');
  expect(c.Connected?.message).toMatch(/refused this agent's credentials: .*token/i);
  expect(c.CredentialExpiresSoon).toMatchObject({ status: 'True', reason: 'TokenExpiresSoon' });
  expect(c.Registered?.status).not.toBe('True');
  expect(gw.app.gateway!.session('west')).toBeUndefined();
});

it('says which Secret is missing when the token reference points nowhere', async () => {
  await kubectl(['apply', '-f', '-'], clusterAgent('north', 'north', 'no-such-secret'));
  await startAgent('north');
  const c = await until(
    'TokenUnavailable',
    () => conditions('north'),
    (c) => c.Connected?.reason === 'TokenUnavailable',
  );
  expect(c.Connected?.message).toBe('Secret argocd/no-such-secret (spec.token.secretRef) does not exist');
});

it('follows its token Secret: a rotated token is judged on the live tunnel and presented at the next connection', async () => {
  const jti = (token: string) =>
    (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti;
  const secret = (token: string) => `apiVersion: v1
kind: Secret
metadata: {name: south-token, namespace: argocd}
stringData: {token: ${token}}
`;
  const expiring = await authority.issue('south', { ttlSeconds: 3 * 86_400 });
  const rotated = await authority.issue('south', { ttlSeconds: 90 * 86_400 });
  await kubectl(
    ['apply', '-f', '-'],
    `${secret(expiring)}---\n${clusterAgent('south', 'south', 'south-token')}`,
  );
  await startAgent('south');
  const before = await until(
    'Connected with the expiring token',
    () => conditions('south'),
    (c) => c.Connected?.status === 'True' && c.CredentialExpiresSoon?.reason === 'TokenExpiresSoon',
  );
  expect(gw.app.gateway!.session('south')?.info.tokenId).toBe(jti(expiring));

  // Rotated in its Secret, no restart: judged at once, while the live tunnel keeps the old one.
  await kubectl(['apply', '-f', '-'], secret(rotated));
  const after = await until(
    'the rotated token judged',
    () => conditions('south'),
    (c) => c.CredentialExpiresSoon?.reason === 'TokenValid',
  );
  expect(after.CredentialExpiresSoon?.status).toBe('False');
  expect(after.Connected).toEqual(before.Connected);
  expect(gw.app.gateway!.session('south')?.info.tokenId).toBe(jti(expiring));

  // The next connection (the old token revoked at the gateway) presents the rotated one.
  expect(gw.app.gateway!.kickToken(jti(expiring), 'token rotated')).toEqual(['south']);
  const tokenId = await until(
    'reconnected with the rotated token',
    async () => gw.app.gateway!.session('south')?.info.tokenId,
    (id) => id === jti(rotated),
  );
  expect(tokenId).toBe(jti(rotated));
});
