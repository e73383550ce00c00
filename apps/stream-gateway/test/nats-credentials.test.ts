// The gateway process against a NATS that requires credentials: the shipped users and
// permissions (deploy/base/principal/nats), each role with its own nkey. With its identity the
// gateway works; without one it refuses to start, naming what to set; with a foreign or missing
// one the NATS refuses it and it stops with the reason.
import { rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import type { Agent } from '@pullplane/agent-core';
import { type Bus, connectNatsBus, natsConnectionSecurity } from '@pullplane/bus';
import {
  type AppProcess,
  type LockedNatsServer,
  type NatsServerHandle,
  spawnAppProcess,
  startLockedNatsServer,
  startNatsServer,
  waitFor,
} from '@pullplane/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  get,
  makePki,
  spawnGateway,
  startAgent,
  startBackend,
  startRouter,
  type TestPki,
} from './support.js';

let nats: LockedNatsServer;
let pki: TestPki;
const cleanup: Array<() => Promise<unknown> | unknown> = [];

beforeAll(async () => {
  nats = await startLockedNatsServer();
  pki = await makePki();
}, 30_000);
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(async () => {
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

/** The gateway's flags without any NATS identity. */
const gatewayArgs = (natsUrl: string) => [
  '--listen-host=127.0.0.1',
  '--listen-port=0',
  '--internal-listen-port=0',
  '--advertise-address=127.0.0.1',
  `--tls-cert=${pki.serverCert}`,
  `--tls-key=${pki.serverKey}`,
  `--root-ca-path=${pki.ca}`,
  `--nats-url=${natsUrl}`,
  '--metrics-port=0',
  '--healthz-port=0',
];

function spawn(args: string[]): AppProcess {
  const p = spawnAppProcess('stream-gateway', args);
  cleanup.push(() => p.stop());
  return p;
}

describe('a stream gateway on a NATS that requires credentials', () => {
  it('works with its nkey: its agents reach presence, a proxy routes to them, the admin revokes them', async () => {
    const gateway: GatewayProcess = await spawnGateway(pki, nats.url, [
      `--nats-nkey-seed-path=${nats.seeds.gateway}`,
    ]);
    cleanup.push(() => gateway.child.kill('SIGKILL'));
    const backend = await startBackend('agent-a');
    cleanup.push(() => backend.close());
    const agent: Agent = await startAgent('agent-a', gateway.agentAddress, pki, backend.url);
    cleanup.push(() => agent.stop());
    // A proxy, with the proxy role's identity, sees the agent in presence and reaches it.
    const router = await startRouter(nats.url, pki, nats.seeds.proxy);
    cleanup.push(() => router.close());
    await waitFor(() => router.router.lookup('agent-a')?.gatewayId === gateway.gatewayId, 10_000);
    const s = router.router.open('agent-a', get('/version'));
    expect((await s.responseHead()).status).toBe(200);
    expect(await text(s)).toBe('agent:agent-a GET /version');
    // The admin revokes it as `pullplane agent revoke` does; the gateway disconnects it.
    const admin: Bus = await connectNatsBus({
      servers: nats.url,
      name: 'admin',
      security: natsConnectionSecurity({
        natsUrl: nats.url,
        natsNkeySeedPath: nats.seeds.admin,
        natsInsecure: false,
      }),
      creates: ['revocations'],
    });
    cleanup.push(() => admin.close());
    await admin.revocations.add({
      kind: 'agent',
      agent: 'agent-a',
      reason: 'stolen',
      at: new Date().toISOString(),
    });
    await admin.control.publish({ type: 'agent-revoked', agent: 'agent-a', reason: 'stolen' });
    await waitFor(
      () => gateway.logs.some((l) => l.includes('"agent revoked"') && l.includes('agent-a')),
      10_000,
    );
    // Nothing the gateway did was refused by NATS.
    expect(gateway.logs.filter((l) => /denied|Permissions Violation/i.test(l))).toEqual([]);
  }, 60_000);

  it('refuses to start without credentials (exit 2), naming the flags to set', async () => {
    const p = spawn(gatewayArgs(nats.url));
    expect(await p.exited).toBe(2);
    const out = p.logs.join('\n');
    expect(out).toMatch(/invalid configuration/);
    expect(out).toMatch(/NATS holds agent presence and revocations/);
    expect(out).toMatch(/--nats-nkey-seed-path/);
    expect(out).toMatch(/--nats-insecure/);
  });

  it('with --nats-insecure it warns, the NATS refuses it, and it stops (exit 1)', async () => {
    const p = spawn([...gatewayArgs(nats.url), '--nats-insecure']);
    expect(await p.exited).toBe(1);
    const lines = p.lines();
    expect(lines.find((l) => /^INSECURE: --nats-insecure/.test(String(l.msg)))?.level).toBe('warn');
    expect(lines.find((l) => l.msg === 'stream gateway failed to start')?.err).toMatch(
      /NATS at .* requires credentials.*Authorization Violation/,
    );
  });

  it('with the proxy role identity it may not create presence, and stops (exit 1)', async () => {
    const p = spawn([...gatewayArgs(nats.url), `--nats-nkey-seed-path=${nats.seeds.proxy}`]);
    expect(await p.exited).toBe(1);
    expect(p.lines().find((l) => l.msg === 'stream gateway failed to start')?.err).toMatch(
      /NATS refused: nkey U\w+ may not create bucket pullplane-presence .*Permissions Violation/,
    );
  });

  it('with a seed file that holds no seed it stops, naming the flag (exit 1)', async () => {
    const p = spawn([...gatewayArgs(nats.url), `--nats-nkey-seed-path=${pki.ca}`]);
    expect(await p.exited).toBe(1);
    expect(p.lines().find((l) => l.msg === 'stream gateway failed to start')?.err).toMatch(
      /--nats-nkey-seed-path: .*ca\.crt: not an nkey seed/,
    );
  });
});

describe('a stream gateway on a NATS without users', () => {
  let open: NatsServerHandle;
  beforeAll(async () => {
    open = await startNatsServer();
  });
  afterAll(async () => {
    await open?.stop();
  });

  it('starts with --nats-insecure and says loudly what that leaves open', async () => {
    const p = spawn([...gatewayArgs(open.url), '--nats-insecure']);
    await p.waitForLine((l) => l.msg === 'stream gateway started');
    const warning = p.lines().find((l) => /^INSECURE: --nats-insecure/.test(String(l.msg)));
    expect(warning?.level).toBe('warn');
    expect(warning?.msg).toMatch(/delete revocations.*rewrite presence.*read who is connected/);
  });
});
