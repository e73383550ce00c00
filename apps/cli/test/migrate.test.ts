// `pullplane migrate` on an argocd-agent installation written from argocd-agent's names: its
// params ConfigMaps (shipped defaults plus an operator's changes), Deployments (env from the
// ConfigMap and literal overrides), the Secrets it reads by name and the cluster Secrets it
// wrote. The overlays it produces are kept in deploy/test/fixtures/migrated, where the deploy
// tests render them and hold them to every manifest invariant.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, KubeConfig, type V1Deployment, type V1Secret } from '@kubernetes/client-node';
import {
  ARGOCD_AGENT_AGENT_NAME_LABEL,
  ARGOCD_AGENT_SELF_REGISTERED_LABEL,
  argocdAgentAgentManifests,
  argocdAgentPrincipalManifests,
  type FakeKubeApiServer,
  findBinary,
  type Manifest,
  makeTempDir,
  manifestsToYaml,
  startFakeKubeApiServer,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_DEPLOY_DIR, migrate } from '../src/migrate/migrate-command.js';
import { runCli } from '../src/program.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const deployDir = path.join(root, 'deploy');
const golden = path.join(deployDir, 'test/fixtures/migrated');
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A Secret as argocd-agent's tooling leaves it (contents are placeholders: only names and keys matter here). */
const secret = (
  name: string,
  namespace: string,
  keys: string[],
  labels?: Record<string, string>,
  type = 'Opaque',
): Manifest => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type,
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  data: Object.fromEntries(keys.map((k) => [k, b64(`placeholder ${k}`)])),
});

/** The operator's argocd-agent principal: shipped manifests with a few changes of their own. */
function principalInstallation(): Manifest[] {
  const principal = argocdAgentPrincipalManifests({
    params: {
      'principal.log.level': 'debug',
      'principal.namespace-create.enable': 'true',
      'principal.tls.secret-name': 'my-principal-tls',
    },
  });
  const deployment = principal.find((o) => o.kind === 'Deployment')!;
  const container = (deployment.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } })
    .template.spec.containers[0]!;
  container.env.push(
    { name: 'ARGOCD_PRINCIPAL_ENABLE_SELF_CLUSTER_REGISTRATION', value: 'true' },
    { name: 'ARGOCD_PRINCIPAL_HA_ENABLED', value: 'true' },
    { name: 'ARGOCD_PRINCIPAL_SOMETHING_ELSE', value: 'x' },
  );
  const cluster = (agent: string, self: boolean) =>
    secret(`cluster-${agent}`, 'argocd', ['name', 'server', 'config'], {
      'argocd.argoproj.io/secret-type': 'cluster',
      [ARGOCD_AGENT_AGENT_NAME_LABEL]: agent,
      ...(self ? { [ARGOCD_AGENT_SELF_REGISTERED_LABEL]: 'true' } : {}),
    });
  return [
    ...principal,
    secret('argocd-agent-ca', 'argocd', ['tls.crt', 'tls.key'], undefined, 'kubernetes.io/tls'),
    secret('my-principal-tls', 'argocd', ['tls.crt', 'tls.key'], undefined, 'kubernetes.io/tls'),
    secret(
      'argocd-agent-resource-proxy-tls',
      'argocd',
      ['tls.crt', 'tls.key'],
      undefined,
      'kubernetes.io/tls',
    ),
    secret('argocd-redis-proxy-tls', 'argocd', ['tls.crt', 'tls.key'], undefined, 'kubernetes.io/tls'),
    secret('argocd-agent-jwt', 'argocd', ['jwt.key']),
    cluster('agent-a', false),
    cluster('agent-b', true),
  ];
}

/** An agent's cluster: its params, Deployment and the Secrets it reads. */
function agentInstallation(): Manifest[] {
  return [
    ...argocdAgentAgentManifests({
      params: { 'agent.server.address': 'principal.example.com', 'agent.server.port': '443' },
    }),
    secret('argocd-agent-client-tls', 'argocd', ['tls.crt', 'tls.key'], undefined, 'kubernetes.io/tls'),
    secret('argocd-agent-ca', 'argocd', ['ca.crt']),
  ];
}

let dir: string;
let principalFile: string;
let agentFile: string;
let from: string[];
beforeAll(() => {
  dir = makeTempDir('pullplane-migrate-');
  principalFile = path.join(dir, 'principal.yaml');
  agentFile = path.join(dir, 'agent.yaml');
  writeFileSync(principalFile, manifestsToYaml(principalInstallation()));
  writeFileSync(agentFile, manifestsToYaml(agentInstallation()));
  from = [principalFile, agentFile];
});

describe('pullplane migrate', () => {
  it('writes the overlays kept in deploy/test/fixtures/migrated (UPDATE_GOLDEN=1 rewrites them)', async () => {
    const files = await migrate({
      from,
      namespace: [],
      out: golden,
      deployDir,
      write: process.env.UPDATE_GOLDEN === '1',
    });
    expect([...files.keys()].sort()).toEqual([
      'MIGRATION.md',
      'agent/kustomization.yaml',
      'principal/kustomization.yaml',
    ]);
    for (const [name, text] of files) expect(readFileSync(path.join(golden, name), 'utf8')).toBe(text);
  });

  it('takes over what pullplane reads, maps Secrets, and lists what has no equivalent', async () => {
    const files = await migrate({ from, namespace: [], deployDir, out: dir, write: false });
    const principal = parse(files.get('principal/kustomization.yaml')!);
    const params = patched(principal, 'ConfigMap', 'argocd-agent-params').data as Record<string, string>;
    expect(params).toMatchObject({
      'principal.log.level': 'debug',
      // argocd-agent's default regex names the agent by the certificate's CN: our mtls.
      'principal.auth': 'mtls',
      'principal.tls.min-version': 'tls1.3',
      'principal.redis.server.address': 'argocd-redis:6379',
      // Cluster Secrets argocd-agent wrote were found: adopt them.
      'principal.argocd-agent.adopt-clusters': 'true',
    });
    // Listeners, ports and paths belong to the bundle; features we lack are not carried.
    for (const k of [
      'principal.listen.host',
      'principal.listen.port',
      'principal.healthz.port',
      'principal.namespace-create.enable',
    ])
      expect(params).not.toHaveProperty(k);
    const gateway = patched(principal, 'Deployment', 'argocd-agent-principal') as {
      spec: { template: { spec: { volumes: unknown[] } } };
    };
    expect(gateway.spec.template.spec.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'tls-server',
          secret: expect.objectContaining({ secretName: 'my-principal-tls' }),
        }),
        // argocd-agentctl's CA Secret has tls.crt (and the CA key), not ca.crt.
        expect.objectContaining({
          name: 'tls-ca',
          secret: expect.objectContaining({
            secretName: 'argocd-agent-ca',
            items: [{ key: 'tls.crt', path: 'ca.crt' }],
          }),
        }),
      ]),
    );
    const report = files.get('MIGRATION.md')!;
    // Every side's section of that title.
    const section = (title: string) =>
      report
        .split(`### ${title}`)
        .slice(1)
        .map((part) => part.split(/\n##/)[0])
        .join('\n');
    const actions = section('Action required');
    expect(actions).toContain('pullplane agent create');
    expect(actions).toContain('argocd-agent-resource-proxy-client-tls');
    expect(actions).toContain('agent.creds is userpass:');
    expect(actions).toContain('cluster-agent-a');
    const none = section('No equivalent in pullplane');
    expect(none).toContain('principal.namespace-create.enable = "true"');
    expect(none).toContain('namespace creation on the principal, which pullplane does not have');
    expect(none).toContain(
      'ARGOCD_PRINCIPAL_HA_ENABLED = "true" (env of Deployment argocd-agent-principal): argocd-agent\'s active/passive HA peering',
    );
    expect(none).toMatch(/principal\.websocket\.enable = "false" .*\(off here: nothing is lost\)/);
    expect(section('Unknown names')).toContain('ARGOCD_PRINCIPAL_SOMETHING_ELSE');
    expect(section('Secrets')).toContain('cluster-agent-b');
    const agent = parse(files.get('agent/kustomization.yaml')!);
    const agentParams = patched(agent, 'ConfigMap', 'argocd-agent-params').data as Record<string, string>;
    expect(agentParams).toMatchObject({
      'agent.server.address': 'principal.example.com',
      'agent.creds': 'mtls:',
    });
    // argocd-agent's principal Service listened on 443; ours on 8443, which the bundle dials.
    expect(agentParams).not.toHaveProperty('agent.server.port');
    expect(actions).toContain('agent.server.port was 443');
  });

  it("renders with kubectl kustomize (from the CLI, on the repository's bundles)", async () => {
    const out = path.join(dir, 'out');
    const io = {
      text: '',
      out(t: string) {
        this.text += t;
      },
      err(t: string) {
        this.text += t;
      },
    };
    expect(
      await runCli(
        ['migrate', '--from', principalFile, '--from', agentFile, '--out', out, '--deploy-dir', deployDir],
        io,
      ),
    ).toBe(0);
    expect(io.text).toContain('# Migrating from argocd-agent');
    const kubectl = findBinary('kubectl', 'install kubectl');
    for (const side of ['principal', 'agent']) {
      const { stdout } = await run(kubectl, ['kustomize', path.join(out, side)], {
        maxBuffer: 32 * 1024 * 1024,
      });
      const objects = parseAllDocuments(stdout).map((d) => d.toJS() as Manifest);
      expect(objects.some((o) => o.kind === 'Deployment')).toBe(true);
    }
    const agent = (
      await run(kubectl, ['kustomize', path.join(out, 'agent')], { maxBuffer: 32 * 1024 * 1024 })
    ).stdout;
    expect(agent).toContain('projected:');
    expect(existsSync(path.join(out, 'MIGRATION.md'))).toBe(true);
  });

  it('reads the same installation from a cluster, never needing Secret values', async () => {
    let kube: FakeKubeApiServer | undefined;
    try {
      kube = await startFakeKubeApiServer();
      const kc = new KubeConfig();
      kc.loadFromString(kube.kubeconfig());
      const core = kc.makeApiClient(CoreV1Api);
      const apps = kc.makeApiClient(AppsV1Api);
      await core.createNamespace({ body: { metadata: { name: 'argocd' } } });
      for (const o of principalInstallation()) {
        const namespace = String(o.metadata.namespace);
        if (o.kind === 'ConfigMap') await core.createNamespacedConfigMap({ namespace, body: o as never });
        else if (o.kind === 'Secret') await core.createNamespacedSecret({ namespace, body: o as V1Secret });
        else if (o.kind === 'Deployment')
          await apps.createNamespacedDeployment({ namespace, body: o as V1Deployment });
      }
      const kubeconfig = await kube.writeKubeconfig(path.join(dir, 'kubeconfig'));
      const fromCluster = await migrate({
        from: [],
        kubeconfig,
        namespace: ['argocd'],
        out: golden,
        deployDir,
        write: false,
      });
      const fromFile = await migrate({
        from: [principalFile],
        namespace: [],
        out: golden,
        deployDir,
        write: false,
      });
      expect(fromCluster).toEqual(fromFile);
      expect(fromCluster.get('principal/kustomization.yaml')).toBe(
        readFileSync(path.join(golden, 'principal/kustomization.yaml'), 'utf8'),
      );
    } finally {
      await kube?.close();
    }
  });

  it('shows only pullplane commands that run: those in MIGRATION.md and in the migration guide', async () => {
    const files = await migrate({ from, namespace: [], deployDir, out: dir, write: false });
    const guide = readFileSync(path.join(root, 'docs/migrating-from-argocd-agent.md'), 'utf8');
    // `pullplane …` in backquotes, up to a pipe: what an operator copies.
    const commands = [
      ...`${files.get('MIGRATION.md')}\n${guide}`.matchAll(/`pullplane ([^`|]+?)\s*(?:\|[^`]*)?`/g),
    ]
      .map((m) => m[1]!.trim())
      .filter((c) => /^(cert create|nats nkeys) /.test(c));
    expect(commands.some((c) => c.includes('--kind proxy --ca-dir ./pki'))).toBe(true);
    expect(commands.some((c) => c.includes('--kind server'))).toBe(true);
    const work = makeTempDir('pullplane-migrate-commands-');
    let errors = '';
    const io = {
      out: () => undefined,
      err: (t: string) => {
        errors += t;
      },
    };
    // The CA they name, as the operator would have saved argocd-agentctl's.
    expect(await runCli(['ca', 'init', '--dir', path.join(work, 'pki')], io)).toBe(0);
    for (const c of new Set(commands)) {
      const argv = c.split(/\s+/).map((w) => w.replace(/^\.\//, `${work}/`));
      errors = '';
      const code = await runCli(argv, io);
      // Notes on stderr are fine (nats nkeys says where the seeds went); errors are not.
      expect([c, code, /^error/m.test(errors) ? errors : '']).toEqual([c, 0, '']);
    }
  });

  it('says so when the input holds no argocd-agent installation', async () => {
    const empty = path.join(dir, 'empty.yaml');
    writeFileSync(empty, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n');
    const io = {
      text: '',
      out(t: string) {
        this.text += t;
      },
      err(t: string) {
        this.text += t;
      },
    };
    expect(await runCli(['migrate', '--from', empty], io)).toBe(1);
    expect(io.text).toContain('no argocd-agent installation found');
  });
});

afterAll(() => undefined);

function parse(text: string): { patches?: Array<{ patch: string }> } & Record<string, unknown> {
  return parseAllDocuments(text)[0]!.toJS() as never;
}

function patched(
  kustomization: { patches?: Array<{ patch: string }> },
  kind: string,
  name: string,
): Record<string, unknown> {
  for (const p of kustomization.patches ?? []) {
    const o = parseAllDocuments(p.patch)[0]!.toJS() as Manifest;
    if (o.kind === kind && o.metadata.name === name) return o;
  }
  throw new Error(`no patch for ${kind}/${name}`);
}

describe('pullplane migrate --deploy-dir', () => {
  it('defaults to the deploy/ bundles of this checkout, not a remote base that may not exist', async () => {
    const out = path.join(dir, 'default-base');
    const files = await migrate({ from, namespace: [], out, deployDir: DEFAULT_DEPLOY_DIR, write: false });
    expect(DEFAULT_DEPLOY_DIR).toBe(deployDir);
    for (const side of ['principal', 'agent']) {
      const k = parseAllDocuments(files.get(`${side}/kustomization.yaml`)!)[0]!.toJS() as {
        resources: string[];
      };
      expect(k.resources.map((r) => path.resolve(out, side, r))).toContain(
        path.join(deployDir, 'base', side),
      );
    }
  });

  it('refuses a local directory without the bundles, saying what to pass', async () => {
    const r = { text: '', out: (t: string) => (r.text += t), err: (t: string) => (r.text += t) };
    expect(await runCli(['migrate', '--from', principalFile, '--deploy-dir', dir], r)).toBe(2);
    expect(r.text).toContain('holds no pullplane bundles');
  });
});
