import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AGENT_TOKEN_AUDIENCE, CALLER_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { type BusBucket, connectNatsBus, natsConnectionSecurity } from '@pullplane/bus';
import { describeCertificate } from '@pullplane/pki';
import { type LockedNatsServer, type NatsRole, startLockedNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { runCli } from '../src/program.js';

let dir: string;
let nats: LockedNatsServer;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cli-admin-'));
  // The shipped users and permissions: one nkey per role.
  nats = await startLockedNatsServer();
});

/** A service's bus with its role's identity (the gateway owns presence). */
const busAs = (role: NatsRole, name: string = role) =>
  connectNatsBus({
    servers: nats.url,
    name,
    security: natsConnectionSecurity({
      natsUrl: nats.url,
      natsNkeySeedPath: nats.seeds[role],
      natsInsecure: false,
    }),
    creates: (role === 'gateway' ? ['presence'] : []) as BusBucket[],
  });
const asAdmin = () => ['--nats-url', nats.url, '--nats-nkey-seed-path', nats.seeds.admin];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await nats.stop();
});

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

type Manifest = {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

describe('pullplane ca and agent', () => {
  const caDir = () => path.join(dir, 'pki');

  it('ca init writes a CA with a private key only the owner can read, and will not clobber it', async () => {
    const r = await cli('ca', 'init', '--dir', caDir(), '--output', 'json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { caCert: string; caKey: string };
    expect(describeCertificate(readFileSync(out.caCert, 'utf8')).isCertificateAuthority).toBe(true);
    expect(statSync(out.caKey).mode & 0o777).toBe(0o600);
    const again = await cli('ca', 'init', '--dir', caDir());
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already holds a CA; pass --force/);
  });

  it('agent create issues a client certificate and prints the manifests for the workload cluster', async () => {
    const r = await cli(
      'agent',
      'create',
      'east',
      '--server-address',
      'principal.example.com',
      '--ca-dir',
      caDir(),
    );
    expect(r.code).toBe(0);
    const docs = parseAllDocuments(r.out).map((d) => d.toJSON() as Manifest);
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'ServiceAccount/pullplane-agent-east',
      'Role/pullplane-agent-east',
      'RoleBinding/pullplane-agent-east',
      'ClusterRole/pullplane-agent-east',
      'ClusterRoleBinding/pullplane-agent-east',
      'NetworkPolicy/pullplane-agent-east',
      'NetworkPolicy/pullplane-agent-east-to-argocd-redis',
      'Secret/pullplane-agent-east-tls',
      'Secret/pullplane-agent-east-ca',
      'ClusterAgent/east',
      'ConfigMap/pullplane-agent-east-params',
      'Deployment/pullplane-agent-east',
    ]);
    const byName = (kind: string) => docs.find((d) => d.kind === kind)!;
    expect((byName('ClusterAgent') as unknown as { spec: unknown }).spec).toEqual({
      server: { address: 'principal.example.com', port: 8443 },
      agentName: 'east',
      tls: { rootCaSecretName: 'pullplane-agent-east-ca', clientCertSecretName: 'pullplane-agent-east-tls' },
    });
    expect(byName('ConfigMap').data).toMatchObject({ 'agent.cluster-agent': 'east' });
    const cert = describeCertificate(docs[7]!.stringData!['tls.crt']!);
    expect(cert.commonName).toBe('east');
    // An agent credential, and nothing else: the gateway's agent listener accepts only this kind.
    expect(cert.uris).toEqual(['spiffe://pullplane/agent/east']);
    expect(docs[8]!.stringData!['ca.crt']).toBe(readFileSync(path.join(caDir(), 'ca.crt'), 'utf8'));
  });

  it('agent create can issue a bearer token the gateway verifies instead', async () => {
    const gatewayKey = await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE });
    const keyFile = path.join(dir, 'gateway-jwt.key');
    writeFileSync(keyFile, gatewayKey.exportPrivateKeyPem());
    const r = await cli(
      'agent',
      'create',
      'west',
      '--server-address',
      'p',
      '--token-key-path',
      keyFile,
      '--output',
      'json',
    );
    expect(r.code).toBe(0);
    const docs = JSON.parse(r.out) as Manifest[];
    const secret = docs.find((d) => d.metadata.name === 'pullplane-agent-west-token')!;
    expect(
      (docs.find((d) => d.kind === 'ClusterAgent') as unknown as { spec: { token: unknown } }).spec.token,
    ).toEqual({ secretRef: { name: 'pullplane-agent-west-token', key: 'token' } });
    expect(await gatewayKey.verify(secret.stringData!.token!)).toMatchObject({ agent: 'west' });
    // An agent token is not a caller token: the resource proxy's verifier refuses it.
    const asCaller = await TokenAuthority.fromFile(keyFile, { audience: CALLER_TOKEN_AUDIENCE });
    await expect(asCaller.verify(secret.stringData!.token!)).rejects.toMatchObject({
      code: 'TOKEN_WRONG_AUDIENCE',
    });
  });

  it('cert create issues a proxy certificate as a kubernetes.io/tls Secret', async () => {
    const r = await cli(
      'cert',
      'create',
      'argocd-agent-resource-proxy',
      '--kind',
      'proxy',
      '--ca-dir',
      caDir(),
      '--secret-name',
      'argocd-agent-resource-proxy-client-tls',
      '--output',
      'json',
    );
    expect(r.code).toBe(0);
    const secret = JSON.parse(r.out) as Manifest & { type: string };
    expect([secret.kind, secret.type, secret.metadata.name]).toEqual([
      'Secret',
      'kubernetes.io/tls',
      'argocd-agent-resource-proxy-client-tls',
    ]);
    const cert = describeCertificate(secret.stringData!['tls.crt']!);
    expect([cert.commonName, cert.uris]).toEqual([
      'argocd-agent-resource-proxy',
      ['spiffe://pullplane/proxy/argocd-agent-resource-proxy'],
    ]);
    const bad = await cli('cert', 'create', 'x', '--kind', 'admin', '--ca-dir', caDir());
    expect(bad.code).toBe(2);
  });

  it('cert create issues a server certificate for the names clients dial, and no client kind', async () => {
    const r = await cli(
      'cert',
      'create',
      'argocd-agent-principal',
      '--kind',
      'server',
      '--ca-dir',
      caDir(),
      '--dns',
      'principal.example.com,argocd-agent-principal-internal',
      '--ip',
      '10.0.0.5',
      '--output',
      'json',
    );
    expect(r.code).toBe(0);
    const secret = JSON.parse(r.out) as Manifest;
    expect(secret.metadata.name).toBe('argocd-agent-principal-server-tls');
    const cert = describeCertificate(secret.stringData!['tls.crt']!);
    expect(cert.dnsNames).toEqual(['principal.example.com', 'argocd-agent-principal-internal']);
    expect(cert.ipAddresses).toEqual(['10.0.0.5']);
    // Extended key usage: serverAuth only.
    expect(new X509Certificate(secret.stringData!['tls.crt']!).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    // No credential kind: a server certificate is never taken for an agent, caller or proxy.
    expect(cert.uris).toEqual([]);
    // A server certificate without names, or names on a client certificate, is a usage error.
    expect((await cli('cert', 'create', 'x', '--kind', 'server', '--ca-dir', caDir())).code).toBe(2);
    const named = await cli(
      'cert',
      'create',
      'x',
      '--kind',
      'proxy',
      '--ca-dir',
      caDir(),
      '--dns',
      'x.example',
    );
    expect([named.code, named.err]).toEqual([
      2,
      expect.stringContaining('--dns and --ip are for --kind server'),
    ]);
  });

  it('agent list shows connected agents from presence', async () => {
    const bus = await busAs('gateway');
    await bus.presence.put({
      agent: 'east',
      gatewayId: 'gw-7f3a',
      internalAddress: '10.0.0.9:8444',
      sessionId: 's1',
      connectedAt: '2026-11-22T01:00:00.000Z',
      lastHeartbeat: '2026-11-22T01:05:00.000Z',
      agentVersion: '0.1.0',
      protocolVersion: 1,
    });
    await bus.close();
    const table = await cli('agent', 'list', ...asAdmin());
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^AGENT\s+GATEWAY\s+CONNECTED SINCE\s+LAST HEARTBEAT\s+VERSION\n/);
    expect(table.out).toMatch(/east\s+gw-7f3a\s+2026-11-22T01:00:00.000Z\s+2026-11-22T01:05:00.000Z\s+0.1.0/);
    const json = JSON.parse((await cli('agent', 'list', ...asAdmin(), '--output', 'json')).out) as Array<{
      agent: string;
    }>;
    expect(json.map((r) => r.agent)).toEqual(['east']);
  });

  it('agent revoke records a durable revocation every gateway sees', async () => {
    const r = await cli('agent', 'revoke', 'east', ...asAdmin(), '--reason', 'cluster decommissioned');
    expect(r.code).toBe(0);
    expect(parse(r.out)).toMatchObject({ agent: 'east', reason: 'cluster decommissioned' });
    // Durable: two gateways' buses connecting after the command each replay it on watch.
    for (const name of ['gateway-1', 'gateway-2']) {
      const bus = await busAs('gateway', name);
      const seen: string[] = [];
      const stop = await bus.revocations.watch((rev) =>
        seen.push(rev.kind === 'agent' ? rev.agent : rev.jti),
      );
      // The watch may deliver a record twice (replay, then live); consumers are idempotent.
      await expect.poll(() => [...new Set(seen)], { timeout: 10_000 }).toEqual(['east']);
      expect(await bus.revocations.list()).toEqual([
        expect.objectContaining({ kind: 'agent', agent: 'east' }),
      ]);
      stop();
      await bus.close();
    }
  });

  it('token revoke records a durable token revocation and announces it', async () => {
    const bus = await busAs('proxy', 'watcher');
    const announced = new Promise<unknown>((resolve) =>
      bus.control.subscribe((ev) => {
        if (ev.type === 'token-denied') resolve(ev);
      }),
    );
    try {
      const r = await cli('token', 'revoke', 'c0ffee-1', ...asAdmin(), '--output', 'json');
      expect(r.code).toBe(0);
      expect(await announced).toEqual({ type: 'token-denied', jti: 'c0ffee-1' });
      expect(await bus.revocations.list()).toContainEqual(
        expect.objectContaining({ kind: 'token', jti: 'c0ffee-1' }),
      );
    } finally {
      await bus.close();
    }
  });

  it.each([
    [['agent', 'create', 'Bad_Name', '--server-address', 'p', '--ca-dir', '/x'], /not an agent name/],
    [['agent', 'create', 'ok', '--server-address', 'p'], /choose one credential/],
    [
      ['agent', 'create', 'ok', '--server-address', 'p', '--ca-dir', '/x', '--server-port', '70000'],
      /must be a port/,
    ],
    [['agent', 'list'], /required option '--nats-url <url>'/],
    [['agent', 'list', '--nats-url', 'nats://x', '--output', 'xml'], /Allowed choices are table, json, yaml/],
    [['agent', 'revoke', '../etc', '--nats-url', 'nats://127.0.0.1:1'], /not an agent name/],
    // No NATS identity: refused before connecting, naming what to set.
    [
      ['agent', 'revoke', 'east', '--nats-url', 'nats://127.0.0.1:1'],
      /--nats-nkey-seed-path.*--nats-insecure/,
    ],
    [
      ['token', 'revoke', 'abc', '--nats-url', 'nats://127.0.0.1:1'],
      /--nats-nkey-seed-path.*--nats-insecure/,
    ],
    [['ca', 'init'], /required option '--dir <dir>'/],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });

  it('fails with exit code 1 and a clear message when NATS is unreachable', async () => {
    const r = await cli('agent', 'list', '--nats-url', 'nats://127.0.0.1:1', '--nats-insecure');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/cannot (reach|connect to) NATS/);
    expect(r.err).toMatch(/warning: INSECURE: --nats-insecure/);
  });

  it('revokes only with the admin identity: a proxy identity is refused and stores nothing', async () => {
    const r = await cli(
      'agent',
      'revoke',
      'west',
      '--nats-url',
      nats.url,
      '--nats-nkey-seed-path',
      nats.seeds.proxy,
    );
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /NATS refused: nkey U\w+ may not create bucket pullplane-presence-revocations .*Permissions Violation/,
    );
    const token = await cli(
      'token',
      'revoke',
      'forged',
      '--nats-url',
      nats.url,
      '--nats-nkey-seed-path',
      nats.seeds.gateway,
    );
    expect(token.code).toBe(1);
    expect(token.err).toMatch(
      /NATS refused: nkey U\w+ may not store a revocation in bucket pullplane-presence-revocations .*Permissions Violation/,
    );
    const bus = await busAs('gateway');
    try {
      const stored = (await bus.revocations.list()).map((x) => (x.kind === 'agent' ? x.agent : x.jti));
      expect(stored).not.toContain('west');
      expect(stored).not.toContain('forged');
    } finally {
      await bus.close();
    }
  });

  it("takes its NATS settings from PULLPLANE_NATS_* and never from the services' env", async () => {
    const saved = { ...process.env };
    try {
      // A gateway pod's env names the gateway's identity: the CLI must not act as the gateway.
      process.env.ARGOCD_PRINCIPAL_NATS_URL = nats.url;
      process.env.ARGOCD_PRINCIPAL_NATS_NKEY_SEED_PATH = nats.seeds.gateway;
      expect((await cli('agent', 'list')).err).toMatch(/required option '--nats-url <url>'/);
      process.env.PULLPLANE_NATS_URL = nats.url;
      // =false means false (commander alone would read any value of a boolean's env as true).
      process.env.PULLPLANE_NATS_INSECURE = 'false';
      const noIdentity = await cli('agent', 'list');
      expect([noIdentity.code, noIdentity.err]).toEqual([2, expect.stringMatching(/--nats-insecure/)]);
      process.env.PULLPLANE_NATS_INSECURE = 'yes';
      expect((await cli('agent', 'list')).err).toMatch(/PULLPLANE_NATS_INSECURE must be true or false/);
      delete process.env.PULLPLANE_NATS_INSECURE;
      process.env.PULLPLANE_NATS_NKEY_SEED_PATH = nats.seeds.admin;
      const r = await cli('agent', 'list', '--output', 'json');
      expect(r.code).toBe(0);
      expect((JSON.parse(r.out) as Array<{ agent: string }>).map((x) => x.agent)).toContain('east');
    } finally {
      process.env = saved;
    }
  });
});
