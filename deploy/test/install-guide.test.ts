// The install guide's Secret tables come with the commands that create them (deploy/README.md).
// Those commands run here as an operator runs them: bash, the real `pullplane` CLI (built),
// openssl, and kubectl applying to the Kubernetes API stand-in. What they create must be what the
// tables list (every Secret the operator creates, with at least its keys, and nothing else), and
// what the bundles then read from it must work: certificates chained to the CA the services
// trust, for the names their clients dial (taken from the rendered configuration), client
// certificates of the kind the listener admits, and token keys that verify what the CLI issues.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { TokenAuthority } from '@pullplane/auth';
import { EXTENSION_PROXY_AUDIENCE } from '@pullplane/extension-proxy';
import { describeCertificate } from '@pullplane/pki';
import {
  builtAppMain,
  type FakeKubeApiServer,
  findBinary,
  makeTempDir,
  startFakeKubeApiServer,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysBehind } from './support/agreement.js';
import { type ContainerConfig, containerConfig, IMAGE, removeScratch } from './support/apps.js';
import { type GuideRef, guideObjects, guideScripts } from './support/install-guide.js';
import { containersOf } from './support/overlays.js';
import { find, get, type K8sObject, render, workloads } from './support/render.js';

const run = promisify(execFile);

const PRINCIPAL_TABLE: GuideRef = { file: 'README.md', heading: 'Principal Secrets (plain mTLS)' };
const WORKLOAD_TABLE: GuideRef = { file: 'README.md', heading: 'Workload-cluster Secrets (plain mTLS)' };

/**
 * The guide sections with Secrets to create, in the order an operator follows them; one
 * installation shares a working directory (the agent's certificate comes from the principal's
 * CA). docs/pki.md's other ways of making the principal's Secrets are installations of their own,
 * held to the same table and the same checks; `table` is where the Secrets they create are listed.
 */
const SECTIONS: Array<{ ref: GuideRef; table?: GuideRef; overlay: string; install: string }> = [
  { ref: PRINCIPAL_TABLE, overlay: 'base/principal', install: 'plain' },
  { ref: WORKLOAD_TABLE, overlay: 'base/agent', install: 'plain' },
  {
    ref: { file: 'README.md', heading: 'Principal Secrets (mesh)' },
    overlay: 'istio/principal',
    install: 'mesh',
  },
  {
    ref: { file: '../docs/pki.md', heading: 'With the CLI, one Secret at a time' },
    table: PRINCIPAL_TABLE,
    overlay: 'base/principal',
    install: 'pki-cli',
  },
  { ref: WORKLOAD_TABLE, overlay: 'base/agent', install: 'pki-cli' },
  {
    ref: { file: '../docs/pki.md', heading: 'With openssl' },
    table: PRINCIPAL_TABLE,
    overlay: 'base/principal',
    install: 'pki-openssl',
  },
  { ref: WORKLOAD_TABLE, overlay: 'base/agent', install: 'pki-openssl' },
];
const PLAIN_INSTALLS = ['plain', 'pki-cli', 'pki-openssl'];
const key = (install: string, overlay: string) => `${install}:${overlay}`;

interface Created {
  name: string;
  type?: string;
  data: Record<string, Buffer>;
}

let work: string;
let bin: string;
const created = new Map<string, Map<string, Created>>();

/** Runs a section's scripts in its installation's working directory against a fresh API stand-in. */
async function runSection(ref: GuideRef, install: string): Promise<Map<string, Created>> {
  const cwd = path.join(work, install);
  mkdirSync(cwd, { recursive: true });
  let kube: FakeKubeApiServer | undefined;
  try {
    kube = await startFakeKubeApiServer();
    const kubeconfig = await kube.writeKubeconfig(path.join(work, `kubeconfig-${created.size}`));
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: kubeconfig, HOME: work };
    // Argo CD is installed: its namespace exists.
    await run(findBinary('kubectl', 'install kubectl'), ['create', 'namespace', 'argocd'], { env });
    for (const script of guideScripts(ref))
      await run('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, timeout: 240_000 });
    const { stdout } = await run(
      findBinary('kubectl', 'install kubectl'),
      ['get', 'secrets', '-n', 'argocd', '-o', 'json'],
      {
        env,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const items = (
      JSON.parse(stdout) as {
        items: Array<{ metadata: { name: string }; type?: string; data?: Record<string, string> }>;
      }
    ).items;
    return new Map(
      items.map((s) => [
        s.metadata.name,
        {
          name: s.metadata.name,
          ...(s.type ? { type: s.type } : {}),
          data: Object.fromEntries(
            Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
          ),
        },
      ]),
    );
  } finally {
    await kube?.close();
  }
}

beforeAll(async () => {
  work = makeTempDir('pullplane-install-guide-');
  bin = path.join(work, 'bin');
  mkdirSync(bin);
  // `pullplane` as the guide calls it: the built CLI.
  writeFileSync(
    path.join(bin, 'pullplane'),
    `#!/bin/sh\nexec "${process.execPath}" "${builtAppMain('cli')}" "$@"\n`,
  );
  chmodSync(path.join(bin, 'pullplane'), 0o755);
  for (const s of SECTIONS) created.set(key(s.install, s.overlay), await runSection(s.ref, s.install));
}, 900_000);
afterAll(removeScratch);

describe.each(SECTIONS)('$ref.file "$ref.heading" ($install)', ({ ref, table, overlay, install }) => {
  it('creates exactly the Secrets its table says the operator creates, with their keys', () => {
    const secrets = created.get(key(install, overlay))!;
    const rows = guideObjects(table ?? ref).filter((o) => o.kind === 'Secret' && o.source === 'you');
    expect(rows.length).toBeGreaterThan(0);
    expect([...secrets.keys()].sort()).toEqual(rows.map((r) => r.name).sort());
    for (const r of rows) {
      const have = Object.keys(secrets.get(r.name)!.data);
      expect([r.name, r.keys.filter((k) => !have.includes(k))]).toEqual([r.name, []]);
    }
  });
});

/** The rendered overlay's pullplane containers, loaded by their apps' loaders. */
async function loaded(dir: string) {
  const objects = await render(dir);
  const out: Array<{ w: K8sObject; c: K8sObject['spec']; cfg: ContainerConfig }> = [];
  for (const w of workloads(objects))
    for (const c of containersOf(w))
      if (IMAGE.test(c.image)) out.push({ w, c, cfg: await containerConfig(objects, w, c) });
  return { objects, containers: out };
}

/** The Secret key a container reads a configured path from. */
function secretAt(entry: { w: K8sObject; c: K8sObject['spec']; cfg: ContainerConfig }, value: string) {
  const podPath = value.slice(entry.cfg.root.length);
  const behind = keysBehind(entry.w, entry.c, podPath);
  if (behind.kind !== 'keys' || behind.keys.length !== 1 || behind.keys[0]!.kind !== 'Secret')
    throw new Error(`${entry.w.metadata.name}: ${podPath} is not one Secret key`);
  return behind.keys[0] as { name: string; key: string };
}

describe.each(PLAIN_INSTALLS)('what the plain mTLS bundles read from those Secrets works (%s)', (install) => {
  let principal: Awaited<ReturnType<typeof loaded>>;
  let agent: Awaited<ReturnType<typeof loaded>>;
  let ca: X509Certificate;
  const secret = (ref: { name: string; key: string }, side = 'base/principal') => {
    const s = created.get(key(install, side))!.get(ref.name);
    if (!s?.data[ref.key]) throw new Error(`the guide created no ${ref.name}/${ref.key}`);
    return s.data[ref.key]!;
  };
  const app = (name: string) => principal.containers.find((e) => e.cfg.app === name)!;
  beforeAll(async () => {
    principal = await loaded('base/principal');
    agent = await loaded('base/agent');
    ca = new X509Certificate(secret({ name: 'argocd-agent-ca', key: 'ca.crt' }));
  });

  /** A certificate the container reads at a configured path, checked against the CA. */
  const certificate = (entry: (typeof principal.containers)[number], value: string, side?: string) => {
    const pem = secret(secretAt(entry, value), side);
    expect(new X509Certificate(pem).verify(ca.publicKey)).toBe(true);
    return describeCertificate(pem);
  };

  it('serves each listener a certificate for the name its clients dial', async () => {
    const gateway = app('stream-gateway');
    const names = certificate(gateway, gateway.cfg.config.tlsCert).dnsNames;
    // The proxies verify the gateway by one name; agents dial agent.server.address.
    for (const p of ['resource-proxy', 'redis-proxy', 'extension-proxy'])
      expect(names).toContain(String(app(p).cfg.config.gatewayServerName));
    expect(names).toContain(agent.containers[0]!.cfg.config.serverAddress);
    // Argo CD dials the resource proxy at the URL registration writes into cluster Secrets.
    const resource = app('resource-proxy');
    expect(certificate(resource, resource.cfg.config.resourceProxyCertPath).dnsNames).toContain(
      new URL(gateway.cfg.config.resourceProxyUrl).hostname,
    );
    // The Argo CD server dials the redis proxy at redis.server (deploy/argocd).
    const redis = app('redis-proxy');
    const redisServer = get(await render('test/fixtures/argocd'), 'ConfigMap', 'argocd-cmd-params-cm').data[
      'redis.server'
    ] as string;
    expect(certificate(redis, redis.cfg.config.tlsCertPath).dnsNames).toContain(redisServer.split(':')[0]);
    // And the extension proxy at the URL of each extension (deploy/argocd/extensions).
    const ext = app('extension-proxy');
    const extCm = find(await render('test/fixtures/argocd-extensions'), 'ConfigMap', 'argocd-cm')!;
    const url = /url:\s*(\S+)/.exec(Object.values(extCm.data as Record<string, string>).join('\n'))![1]!;
    expect(certificate(ext, ext.cfg.config.tlsCertPath).dnsNames).toContain(new URL(url).hostname);
  });

  it("gives each proxy a proxy certificate the gateways' internal listener admits, and the agent an agent certificate", () => {
    const allowed = app('stream-gateway').cfg.config.internalAllowedClients as string[];
    for (const p of ['resource-proxy', 'redis-proxy', 'extension-proxy']) {
      const cert = certificate(app(p), app(p).cfg.config.gatewayCertPath);
      expect(allowed).toContain(cert.commonName);
      expect(cert.uris).toEqual([`spiffe://pullplane/proxy/${cert.commonName}`]);
    }
    const a = agent.containers[0]!;
    const cert = certificate(a, a.cfg.config.tlsClientCert, 'base/agent');
    expect(cert.uris).toEqual([`spiffe://pullplane/agent/${cert.commonName}`]);
    // The CA the agent verifies the gateway with is the one that signed the gateway's certificate.
    expect(
      new X509Certificate(secret(secretAt(a, a.cfg.config.rootCaPath), 'base/agent')).fingerprint256,
    ).toBe(ca.fingerprint256);
  });

  it('gives the extension proxy the public half of the key whose tokens the CLI issues, and the gateway a key that signs', async () => {
    const ext = app('extension-proxy');
    const publicKey = secret(secretAt(ext, ext.cfg.config.tokenKeyPath)).toString();
    expect(publicKey).toContain('BEGIN PUBLIC KEY');
    const { stdout } = await run(
      path.join(bin, 'pullplane'),
      ['extensions', 'token', '--token-key-path', 'extension-token.key', '--output', 'json'],
      { cwd: path.join(work, install) },
    );
    const header = (JSON.parse(stdout) as { header: string }).header;
    const verifier = await TokenAuthority.fromPem(publicKey, { audience: EXTENSION_PROXY_AUDIENCE });
    expect(await verifier.verify(header.replace(/^Bearer /, ''))).toMatchObject({ agent: 'argocd-server' });
    // A key of its own: the cluster-Secret key does not verify it.
    const gateway = app('stream-gateway');
    const jwt = secret(secretAt(gateway, gateway.cfg.config.registrationTokenKeyPath)).toString();
    const other = await TokenAuthority.fromPem(jwt, { audience: EXTENSION_PROXY_AUDIENCE });
    await expect(other.verify(header.replace(/^Bearer /, ''))).rejects.toMatchObject({
      code: 'TOKEN_BAD_SIGNATURE',
    });
    expect(readFileSync(path.join(work, install, 'extension-token.key'), 'utf8')).toContain('PRIVATE KEY');
  });
});
