// agent create grants what deploy/base/agent grants (and, enhanced, what
// deploy/components/agent-enhanced-rbac adds), plus its own ClusterAgent, and sizes its
// container as the base bundle does: read from the YAML here, not from the copy the CLI uses.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { agentManifests } from '../src/agent-manifests.js';

const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy');
type Obj = {
  kind: string;
  metadata: { name: string };
  rules?: unknown[];
  spec?: { template?: { spec?: { containers?: Array<{ resources?: unknown }> } } };
};
const objects = (file: string) =>
  parseAllDocuments(readFileSync(path.join(DEPLOY, file), 'utf8')).map((d) => d.toJS() as Obj);
const rulesOf = (objs: Obj[], kind: string, name?: string) =>
  objs.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name))?.rules;

const base = objects('base/agent/rbac.yaml');
const baseWorkload = objects('base/agent/agent.yaml');
const enhanced = objects('components/agent-enhanced-rbac/clusterrole.yaml');
const emitted = (rbac: 'minimal' | 'enhanced') =>
  agentManifests({
    agent: 'east',
    namespace: 'argocd',
    serverAddress: 'gw.example.com',
    serverPort: 8443,
    image: 'ghcr.io/pullplane/agent:0.1.0',
    rbac,
    credentials: { kind: 'token', token: 't' },
  }) as Obj[];

it("grants the base bundle's Role rules and its own ClusterAgent, nothing else", () => {
  expect(rulesOf(emitted('minimal'), 'Role')).toEqual([
    ...rulesOf(base, 'Role', 'argocd-agent-agent')!,
    {
      apiGroups: ['pullplane.io'],
      resources: ['clusteragents'],
      resourceNames: ['east'],
      verbs: ['get', 'list', 'watch'],
    },
    {
      apiGroups: ['pullplane.io'],
      resources: ['clusteragents/status'],
      resourceNames: ['east'],
      verbs: ['get', 'patch', 'update'],
    },
  ]);
});

it("grants the base bundle's ClusterRole rules (minimal), or the enhanced component's (enhanced)", () => {
  expect(rulesOf(emitted('minimal'), 'ClusterRole')).toEqual(
    rulesOf(base, 'ClusterRole', 'argocd-agent-agent'),
  );
  expect(rulesOf(emitted('enhanced'), 'ClusterRole')).toEqual(
    rulesOf(enhanced, 'ClusterRole', 'argocd-agent-enhanced'),
  );
});

it("runs the agent with the base bundle's requests and limits", () => {
  const resources = (objs: Obj[]) =>
    objs.find((o) => o.kind === 'Deployment')?.spec?.template?.spec?.containers?.[0]?.resources;
  expect(resources(baseWorkload)).toBeDefined();
  expect(resources(emitted('minimal'))).toEqual(resources(baseWorkload));
});
