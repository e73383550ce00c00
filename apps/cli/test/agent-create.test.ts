// `pullplane agent create`: its output is applied as is with kubectl to the Kubernetes API
// stand-in, next to deploy/base/agent without touching any of its objects, and the agent
// started from its Deployment (args, env and the params ConfigMap laid out as the kubelet
// mounts it) connects to a real gateway with the issued token; its ClusterAgent says so.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import {
  type AppProcess,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type NatsServerHandle,
  runKubectl,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
} from '@pullplane/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { runCli } from '../src/program.js';

const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  stringData?: Record<string, string>;
}

let dir: string;
let api: FakeKubeApiServer;
let kubeconfig: string;
let nats: NatsServerHandle;
let gateway: AppProcess;
let agent: AppProcess | undefined;
let gatewayPort: number;
let tokenKey: string;
let caCert: string;

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  if (code !== 0) throw new Error(`pullplane ${argv.join(' ')}: ${err}`);
  return out;
}
const kubectl = async (args: string[], input?: string) => {
  const r = await runKubectl(args, { kubeconfig, ...(input ? { input } : {}) });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

beforeAll(async () => {
  dir = makeTempDir('agent-create-');
  const caDir = path.join(dir, 'pki');
  await cli('ca', 'init', '--dir', caDir);
  caCert = path.join(caDir, 'ca.crt');
  const server = JSON.parse(
    await cli(
      'cert',
      'create',
      'gateway',
      '--kind',
      'server',
      '--dns',
      'localhost',
      '--ip',
      '127.0.0.1',
      '--ca-dir',
      caDir,
      '--output',
      'json',
    ),
  ) as K8sObject;
  writeFileSync(path.join(dir, 'tls.crt'), server.stringData!['tls.crt']!);
  writeFileSync(path.join(dir, 'tls.key'), server.stringData!['tls.key']!);
  tokenKey = path.join(dir, 'jwt.key');
  writeFileSync(
    tokenKey,
    (await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE })).exportPrivateKeyPem(),
  );

  api = await startFakeKubeApiServer();
  api.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  kubeconfig = await api.writeKubeconfig(path.join(dir, 'workload.kubeconfig'));
  nats = await startNatsServer();
  gatewayPort = await freePort();
  gateway = spawnAppProcess('stream-gateway', [
    '--listen-host=127.0.0.1',
    `--listen-port=${gatewayPort}`,
    '--internal-listen-port=0',
    `--tls-cert=${path.join(dir, 'tls.crt')}`,
    `--tls-key=${path.join(dir, 'tls.key')}`,
    `--root-ca-path=${caCert}`,
    '--auth=token',
    `--token-key-path=${tokenKey}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
  ]);
  await gateway.waitForLine((l) => l.msg === 'stream gateway started', 30_000);
}, 90_000);
afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await nats?.stop();
  await api?.close();
});

it('emits a set kubectl applies as is, next to deploy/base/agent, and the agent runs from it', async () => {
  const out = await cli(
    'agent',
    'create',
    'east',
    '--server-address',
    '127.0.0.1',
    '--server-port',
    String(gatewayPort),
    '--token-key-path',
    tokenKey,
    '--gateway-ca-path',
    caCert,
  );
  const objects = parseAllDocuments(out).map((d) => d.toJSON() as K8sObject);
  // No name it uses is one the base uses for the same kind.
  const base = parseAllDocuments(
    (await runKubectl(['kustomize', path.join(DEPLOY, 'base/agent')], { kubeconfig })).stdout,
  ).map((d) => d.toJSON() as K8sObject);
  const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
  const baseKeys = new Set(base.map(key));
  expect(objects.map(key).filter((k) => baseKeys.has(k))).toEqual([]);

  await kubectl(['apply', '-f', path.join(DEPLOY, 'crds/clusteragents.pullplane.io.yaml')]);
  const applied = await kubectl(['apply', '-f', '-'], out);
  expect(applied.trim().split('\n')).toHaveLength(objects.length);
  expect(applied).toContain('clusteragent.pullplane.io/east created');

  // The pod as the kubelet would start it: its args, its env, its params ConfigMap mounted
  // as a directory; the local API through a kubeconfig instead of the ServiceAccount token.
  const deployment = objects.find((o) => o.kind === 'Deployment')!;
  const pod = (deployment.spec as { template: { spec: PodSpec } }).template.spec;
  const container = pod.containers[0]!;
  const paramsVolume = pod.volumes.find((v) => v.name === 'params')!;
  const configMap = objects.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === paramsVolume.configMap!.name,
  )!;
  const mount = container.volumeMounts.find((m) => m.name === 'params')!;
  const paramsDir = path.join(dir, 'params');
  mkdirSync(paramsDir);
  for (const [k, v] of Object.entries(configMap.data!)) writeFileSync(path.join(paramsDir, k), v);
  const args = container.args.map((a) => a.replace(mount.mountPath, paramsDir));
  expect(container.env.map((e) => e.name)).toEqual(['ARGOCD_AGENT_NAMESPACE', 'REDIS_PASSWORD']);
  // Argo CD's Redis password only if its Secret exists: this cluster has no Argo CD and no
  // Secret argocd-redis, so the kubelet starts the pod without REDIS_PASSWORD.
  expect(container.env.find((e) => e.name === 'REDIS_PASSWORD')?.valueFrom).toEqual({
    secretKeyRef: { name: 'argocd-redis', key: 'auth', optional: true },
  });
  agent = spawnAppProcess(
    'agent',
    [...args, `--kubeconfig=${kubeconfig}`, '--metrics-port=0', '--healthz-port=0'],
    { ARGOCD_AGENT_NAMESPACE: 'argocd' },
  );
  await gateway.waitForLine((l) => l.msg === 'agent connected' && l.agent === 'east', 30_000);

  const deadline = Date.now() + 30_000;
  let connected: string | undefined;
  while (connected !== 'True' && Date.now() < deadline) {
    const ca = parse(await kubectl(['get', 'clusteragent', 'east', '-n', 'argocd', '-o', 'yaml'])) as {
      status?: { conditions?: Array<{ type: string; status: string }> };
    };
    connected = ca.status?.conditions?.find((c) => c.type === 'Connected')?.status;
    if (connected !== 'True') await new Promise((r) => setTimeout(r, 100)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
  expect(connected).toBe('True');
}, 120_000);

interface PodSpec {
  containers: Array<{
    args: string[];
    env: Array<{ name: string; valueFrom?: unknown }>;
    volumeMounts: Array<{ name: string; mountPath: string }>;
  }>;
  volumes: Array<{ name: string; configMap?: { name: string } }>;
}
