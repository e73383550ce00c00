import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { connectNatsBus, natsConnectionSecurity } from '@pullplane/bus';
import { createCertificateAuthority, describeCertificate } from '@pullplane/pki';
import { type LockedNatsServer, startLockedNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from '../src/program.js';

let dir: string;
let nats: LockedNatsServer;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cli-'));
  nats = await startLockedNatsServer();
});
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

interface Kubeconfig {
  clusters: Array<{ name: string; cluster: { server: string } }>;
  users: Array<{ name: string; user: { token?: string; 'client-certificate-data'?: string } }>;
  'current-context': string;
}

describe('pullplane kubeconfig', () => {
  it('issues one single-agent token per context, verifiable by the proxy', async () => {
    const authority = await TokenAuthority.generate({ audience: 'resource-proxy' });
    const key = path.join(dir, 'jwt.key');
    writeFileSync(key, authority.exportPrivateKeyPem());
    const r = await cli(
      'kubeconfig',
      '--server',
      'https://proxy:9090',
      '--agent',
      'east,west',
      '--token-key-path',
      key,
    );
    expect(r.code).toBe(0);
    const kc = parse(r.out) as Kubeconfig;
    expect(kc.clusters.map((c) => c.cluster.server)).toEqual([
      'https://proxy:9090/clusters/east',
      'https://proxy:9090/clusters/west',
    ]);
    const verified = await authority.verify(kc.users[1]!.user.token!);
    expect(verified).toMatchObject({ agent: 'kubectl', agents: ['west'] });
  });

  it('issues caller certificates named after each agent, written with mode 0600', async () => {
    const ca = await createCertificateAuthority({ commonName: 'proxy-clients' });
    writeFileSync(path.join(dir, 'ca.crt'), ca.certPem);
    writeFileSync(path.join(dir, 'ca.key'), ca.keyPem);
    const out = path.join(dir, 'kubeconfig');
    const r = await cli(
      'kubeconfig',
      '--server=https://proxy:9090',
      '--agent=east',
      `--client-ca-cert=${path.join(dir, 'ca.crt')}`,
      `--client-ca-key=${path.join(dir, 'ca.key')}`,
      '--file',
      out,
    );
    expect(r.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const kc = parse(readFileSync(out, 'utf8')) as Kubeconfig;
    const pem = Buffer.from(kc.users[0]!.user['client-certificate-data']!, 'base64').toString();
    expect(describeCertificate(pem).commonName).toBe('east');
    // A caller credential: the resource proxy accepts it, the gateway's agent listener never does.
    expect(describeCertificate(pem).uris).toEqual(['spiffe://pullplane/caller/east']);
  });

  it('lists every connected agent from presence with --all', async () => {
    // The gateways write presence; the admin's identity lists it.
    const bus = await connectNatsBus({
      servers: nats.url,
      name: 'gateway',
      security: natsConnectionSecurity({
        natsUrl: nats.url,
        natsNkeySeedPath: nats.seeds.gateway,
        natsInsecure: false,
      }),
      creates: ['presence'],
    });
    for (const agent of ['alpha', 'beta']) {
      await bus.presence.put({
        agent,
        gatewayId: 'gw',
        internalAddress: '10.0.0.1:8444',
        sessionId: `s-${agent}`,
        connectedAt: new Date().toISOString(),
        lastHeartbeat: new Date().toISOString(),
        agentVersion: '0.1.0',
        protocolVersion: 1,
      });
    }
    await bus.close();
    const authority = await TokenAuthority.generate({ audience: 'resource-proxy' });
    const key = path.join(dir, 'jwt2.key');
    writeFileSync(key, authority.exportPrivateKeyPem());
    const r = await cli(
      'kubeconfig',
      '--server',
      'https://p',
      '--all',
      '--nats-url',
      nats.url,
      '--nats-nkey-seed-path',
      nats.seeds.admin,
      '--token-key-path',
      key,
    );
    expect(r.code).toBe(0);
    expect((parse(r.out) as Kubeconfig).clusters.map((c) => c.name)).toEqual(['alpha', 'beta']);
  });

  it.each([
    [['kubeconfig'], /required option '--server <url>'/],
    [['kubeconfig', '--server', 'https://p'], /name at least one agent/],
    [
      ['kubeconfig', '--server', 'https://p', '--agent', 'Bad_Name', '--token-key-path', '/x'],
      /not an agent name/,
    ],
    [['kubeconfig', '--server', 'https://p', '--agent', 'a'], /choose one credential/],
    [['kubeconfig', '--server', 'https://p', '--all', '--token-key-path', '/x'], /--all needs --nats-url/],
    [
      ['kubeconfig', '--server', 'https://p', '--agent', 'a', '--token-key-path', '/x', '--token-ttl', '-5'],
      /positive whole number/,
    ],
    [['frobnicate'], /unknown command/],
  ])('refuses %j with a clear message and exit code 2', async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });
});
