// `pullplane nats nkeys` as the install guide runs it: its Secrets feed the shipped NATS
// configuration (the public keys into the NATS pods' env, a seed into each service), and the
// admin seed it leaves on disk is what `agent revoke` then uses.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectNatsBus, natsConnectionSecurity } from '@pullplane/bus';
import {
  DEPLOY_NATS_CONFIG_DIR,
  makeTempDir,
  type NatsServerHandle,
  startNatsServer,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../src/program.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cli-nkeys-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

type Secret = {
  kind: string;
  metadata: { name: string; namespace: string };
  stringData: Record<string, string>;
};

describe('pullplane nats nkeys', () => {
  let secrets: Map<string, Secret>;
  let nats: NatsServerHandle;
  const seeds = () => path.join(dir, 'nats');

  beforeAll(async () => {
    const r = await cli('nats', 'nkeys', '--dir', seeds());
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/admin\.nk: the administrators/);
    secrets = new Map(
      parseAllDocuments(r.out).map((d) => {
        const s = d.toJS() as Secret;
        return [s.metadata.name, s];
      }),
    );
    // The NATS pods: the shipped configuration, the public keys from argocd-agent-nats-users.
    const users = secrets.get('argocd-agent-nats-users')!.stringData;
    const confDir = makeTempDir('cli-nkeys-nats-');
    for (const f of ['auth.conf', 'permissions.conf'])
      copyFileSync(path.join(DEPLOY_NATS_CONFIG_DIR, f), path.join(confDir, f));
    nats = await startNatsServer({
      config: 'include ./auth.conf\n',
      configDir: confDir,
      env: {
        PULLPLANE_NATS_GATEWAY_NKEY: users.gateway!,
        PULLPLANE_NATS_PROXY_NKEY: users.proxy!,
        PULLPLANE_NATS_ADMIN_NKEY: users.admin!,
      },
    });
  }, 30_000);
  afterAll(async () => {
    await nats?.stop();
  });

  it('prints the Secrets the bundle mounts, and keeps every seed on disk for its owner only', () => {
    expect([...secrets.keys()].sort()).toEqual([
      'argocd-agent-nats-gateway',
      'argocd-agent-nats-proxy',
      'argocd-agent-nats-users',
    ]);
    for (const s of secrets.values()) expect(s.metadata.namespace).toBe('argocd');
    expect(Object.keys(secrets.get('argocd-agent-nats-users')!.stringData).sort()).toEqual([
      'admin',
      'gateway',
      'proxy',
    ]);
    for (const role of ['gateway', 'proxy', 'admin']) {
      const file = path.join(seeds(), `${role}.nk`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toMatch(/^SU[A-Z0-9]+\n$/);
    }
    // The cluster never gets the admin seed; the services' Secrets hold their own seed.
    expect(JSON.stringify([...secrets.values()])).not.toContain(
      readFileSync(path.join(seeds(), 'admin.nk'), 'utf8').trim(),
    );
    expect(secrets.get('argocd-agent-nats-gateway')!.stringData['nkey.seed']).toBe(
      readFileSync(path.join(seeds(), 'gateway.nk'), 'utf8').trim(),
    );
  });

  it('gives identities the shipped NATS admits: the gateway writes presence, the admin revokes', async () => {
    const seedFile = path.join(dir, 'gateway-from-secret.nk');
    writeFileSync(seedFile, secrets.get('argocd-agent-nats-gateway')!.stringData['nkey.seed']!);
    const gateway = await connectNatsBus({
      servers: nats.url,
      name: 'gateway',
      security: natsConnectionSecurity({
        natsUrl: nats.url,
        natsNkeySeedPath: seedFile,
        natsInsecure: false,
      }),
      creates: ['presence'],
    });
    try {
      await gateway.presence.put({
        agent: 'east',
        gatewayId: 'gw-1',
        internalAddress: '10.0.0.1:8444',
        sessionId: 's1',
        connectedAt: 'now',
        lastHeartbeat: 'now',
        agentVersion: '1',
        protocolVersion: 1,
      });
      const admin = ['--nats-url', nats.url, '--nats-nkey-seed-path', path.join(seeds(), 'admin.nk')];
      expect((await cli('agent', 'list', ...admin, '--output', 'json')).out).toContain('"east"');
      const revoked = await cli('agent', 'revoke', 'east', ...admin);
      expect(revoked.code).toBe(0);
      expect((await gateway.revocations.list()).map((r) => (r.kind === 'agent' ? r.agent : r.jti))).toEqual([
        'east',
      ]);
    } finally {
      await gateway.close();
    }
  });

  it('will not replace the seeds without --force', async () => {
    const before = readFileSync(path.join(seeds(), 'admin.nk'), 'utf8');
    const again = await cli('nats', 'nkeys', '--dir', seeds());
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already holds NATS nkeys; pass --force/);
    expect(readFileSync(path.join(seeds(), 'admin.nk'), 'utf8')).toBe(before);
  });
});
