import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, type SessionRecord } from '@pullplane/agent-core';
import { TokenAuthority } from '@pullplane/auth';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { clusterSecret } from '@pullplane/registration';
import { createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import {
  type FakeKubeApiServer,
  type NatsServerHandle,
  openArgoTerminal,
  seedArgoDemo,
  startFakeKubeApiServer,
  startNatsServer,
  waitFor,
} from '@pullplane/testing';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type GatewayProcess, makePki, silent, spawnGateway, startRouter, type TestPki } from './support.js';

// A terminal session through a resource proxy, a gateway process and an agent, and the gateway
// killed with SIGKILL in the middle of it: nothing may be left hanging on either side.
let nats: NatsServerHandle;
let pki: TestPki;
let gateway: GatewayProcess;
let cluster: FakeKubeApiServer;
let agent: Agent;
let routing: Awaited<ReturnType<typeof startRouter>>;
let proxy: ResourceProxy;
let tokens: TokenAuthority;
const ended: SessionRecord[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gateway = await spawnGateway(pki, nats.url);
  cluster = await startFakeKubeApiServer({ token: 'agent-sa-token' });
  seedArgoDemo(cluster.store);
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const { cert, key } = await pki.agent('agent-a');
  agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: gateway.agentAddress,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(await readFile(pki.ca), await readFile(key), await readFile(cert)),
    heartbeatIntervalMs: 1_000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: true,
    exec: { enabled: true },
    onSession: (r) => ended.push(r),
    logger: silent,
  });
  agent.start();
  routing = await startRouter(nats.url, pki);
  await waitFor(() => routing.router.lookup('agent-a') !== undefined, 20_000);
  tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  proxy = createResourceProxy({
    router: routing.router,
    logger: silent,
    registry: new Registry(),
    host: '127.0.0.1',
    port: 0,
    auth: { tokens },
    requestTimeoutMs: 30_000,
    maxRequestBodyBytes: 1024 * 1024,
  });
  await proxy.listen();
}, 60_000);

afterAll(async () => {
  await proxy?.close(0);
  await routing?.close();
  await agent?.stop();
  gateway?.child.kill('SIGKILL');
  await cluster?.close();
  await nats?.stop();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

it('kill -9 of the gateway mid-session: the terminal sees the end and the cluster session is closed', async () => {
  const pod = cluster.store
    .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
    .find((p) => p.metadata.name?.startsWith('guestbook'))!.metadata.name!;
  const secret = clusterSecret({
    agent: 'agent-a',
    namespace: 'argocd',
    server: `http://127.0.0.1:${proxy.port}/clusters/agent-a`,
    credentials: { bearerToken: await tokens.issue('argocd-server', { agents: ['agent-a'] }) },
    fingerprint: 'test',
  });
  const t = await openArgoTerminal(secret, { namespace: 'demo', pod });
  t.type('echo alive\r');
  await waitFor(() => t.shown().includes('alive\r\n'), 30_000);
  const session = cluster.streamSessions().at(-1)!;
  expect(session.endedAt).toBeUndefined();

  gateway.child.kill('SIGKILL');
  // The caller's connection ends (no keystroke needed to notice), and so does the agent's
  // session with the cluster: both within a generous deadline, neither left open.
  await t.closed;
  await waitFor(() => session.endedAt !== undefined, 30_000);
  await waitFor(() => agent.activeSessions === 0, 30_000);
  expect(ended.at(-1)).toMatchObject({ kind: 'exec', status: 101, pod });
}, 90_000);
