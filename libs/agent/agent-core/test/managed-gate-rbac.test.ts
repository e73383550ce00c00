import { Writable } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import {
  AGENT_SERVICE_ACCOUNT_USER,
  type FakeKubeApiServer,
  type SeededArgoDemo,
  seedArgoDemo,
  startFakeKubeApiServer,
} from '@pullplane/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, ManagedGate } from '../src/index.js';

// The agent's managed gate walks owner chains with the agent's own service account; a real
// cluster refuses what that account's RBAC does not cover, and the walk must not take the
// refusal for proof either way.
let cluster: FakeKubeApiServer;
let demo: SeededArgoDemo;
let gate: ManagedGate;
const logs: Record<string, unknown>[] = [];

beforeAll(async () => {
  cluster = await startFakeKubeApiServer({ token: 'agent-sa-token' });
  demo = seedArgoDemo(cluster.store);
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  gate = new ManagedGate(new KubeClient(kc, { refreshMs: 0 }), {
    argocdNamespace: 'argocd',
    logger: pino({ level: 'warn' }, sink),
  });
});
afterAll(async () => {
  gate?.stop();
  await cluster?.close();
});

const podOf = () => {
  const app = demo.apps[0]!;
  return { pod: cluster.store.get(app.pods[0]!), rs: app.replicaSet };
};

describe("the agent's owner lookups under the cluster's RBAC", () => {
  it('treat a pod whose ReplicaSet the agent may not read as not proven managed, and say why', async () => {
    cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, [
      { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods', 'configmaps'] },
      { verbs: ['get', 'list', 'watch'], apiGroups: ['apps'], resources: ['deployments'] },
    ]);
    cluster.clearRequests();
    try {
      const { pod, rs } = podOf();
      expect(await gate.resolver.resolve(pod)).toBe('unknown');
      const lookup = cluster.requests.find(
        (q) => q.path === `/apis/apps/v1/namespaces/${demo.namespace}/replicasets/${rs.name}`,
      );
      expect(lookup).toMatchObject({ status: 403, user: AGENT_SERVICE_ACCOUNT_USER });
      const warning = logs.find((l) => l.msg === 'owner lookup failed; treating the object as unmanaged');
      // The client quotes the first 200 characters of the Status.
      expect(String(warning?.err)).toContain(
        `403 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"replicasets.apps \\"${rs.name}\\" is forbidden: User \\"${AGENT_SERVICE_ACCOUNT_USER}\\"`,
      );
    } finally {
      cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, undefined);
    }
  });

  it('prove the same pod managed once the ReplicaSet is readable', async () => {
    gate.resolver.clear();
    expect(await gate.resolver.resolve(podOf().pod)).toBe('managed');
  });
});
