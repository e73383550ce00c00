// The roles of the shipped NATS configuration (deploy/base/principal/nats/*.conf, loaded by
// startLockedNatsServer) against a real nats-server: each role can do its job with its own
// nkey, and nothing more. Who may write revocations and presence is the point of the lock.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { type LockedNatsServer, type NatsRole, startLockedNatsServer } from '@pullplane/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type BusBucket,
  BusErrorCode,
  type ControlEvent,
  connectNatsBus,
  createNatsUserNkey,
  type NatsSecurityFlags,
  natsConnectionSecurity,
  type PresenceRecord,
} from '../src/index.js';

const record = (agent: string, gatewayId = 'gw-1', agentVersion = '1.2.3'): PresenceRecord => ({
  agent,
  gatewayId,
  internalAddress: '10.0.0.1:8444',
  sessionId: `s-${agent}`,
  connectedAt: new Date().toISOString(),
  lastHeartbeat: new Date().toISOString(),
  agentVersion,
  protocolVersion: 1,
});

/** What each role's service connects as: the gateway owns presence, the admin revocations. */
const OWNS: Record<NatsRole, BusBucket[]> = { gateway: ['presence'], proxy: [], admin: ['revocations'] };

const flags = (nats: { url: string }, more: Partial<NatsSecurityFlags>): NatsSecurityFlags => ({
  natsUrl: nats.url,
  natsInsecure: false,
  ...more,
});

const open: Bus[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});

async function connectAs(nats: LockedNatsServer, role: NatsRole, warnings: string[] = []): Promise<Bus> {
  const bus = await connectNatsBus({
    servers: nats.url,
    name: role,
    security: natsConnectionSecurity(flags(nats, { natsNkeySeedPath: nats.seeds[role] })),
    creates: OWNS[role],
    onWarning: (m, err) => warnings.push(`${m} ${String(err ?? '')}`),
    firstConnectTimeoutMs: 5_000,
  });
  open.push(bus);
  return bus;
}

describe('the shipped NATS roles', () => {
  let nats: LockedNatsServer;
  beforeAll(async () => {
    nats = await startLockedNatsServer();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('the gateway writes presence; a proxy and the admin read and watch it', async () => {
    const gateway = await connectAs(nats, 'gateway');
    const proxy = await connectAs(nats, 'proxy');
    const admin = await connectAs(nats, 'admin');
    await gateway.presence.put(record('east'));
    const events: string[] = [];
    const stop = await proxy.presence.watch((e) =>
      events.push(e.type === 'put' ? e.record.agent : `-${e.agent}`),
    );
    expect(events).toContain('east');
    await gateway.presence.put(record('west'));
    await expect.poll(() => events.includes('west'), { timeout: 5_000 }).toBe(true);
    expect(await proxy.presence.get('west')).toMatchObject({ gatewayId: 'gw-1' });
    expect((await admin.presence.list()).map((r) => r.agent)).toEqual(
      expect.arrayContaining(['east', 'west']),
    );
    await gateway.presence.remove('west', 's-west');
    await expect.poll(() => events.includes('-west'), { timeout: 5_000 }).toBe(true);
    stop();
  });

  it('only the admin writes revocations: the proxy and the gateway are refused, the admin reaches both', async () => {
    const gateway = await connectAs(nats, 'gateway');
    const proxy = await connectAs(nats, 'proxy');
    const admin = await connectAs(nats, 'admin');
    const revocation = {
      kind: 'agent',
      agent: 'east',
      reason: 'stolen',
      at: new Date().toISOString(),
    } as const;
    await admin.revocations.add(revocation);
    for (const [who, bus] of [
      ['proxy', proxy],
      ['gateway', gateway],
    ] as const) {
      const err = await bus.revocations
        .add({ kind: 'token', jti: `forged-by-${who}`, reason: 'x', at: new Date().toISOString() })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err, who).toMatchObject({ code: BusErrorCode.PERMISSION_DENIED });
      expect(String(err)).toMatch(
        /Permissions Violation for Publish to "\$KV\.pullplane-presence-revocations\./,
      );
      const seen: string[] = [];
      const stop = await bus.revocations.watch((r) => seen.push(r.kind === 'agent' ? r.agent : r.jti));
      // The watch replays the admin's revocation; the refused ones were never stored.
      expect(seen).toContain('east');
      expect(seen.filter((s) => s.startsWith('forged'))).toEqual([]);
      stop();
    }
    expect(
      (await gateway.revocations.list()).map((r) => (r.kind === 'agent' ? r.agent : r.jti)),
    ).not.toContain('forged-by-proxy');
  });

  it('a proxy can neither write nor delete presence', async () => {
    const gateway = await connectAs(nats, 'gateway');
    const proxy = await connectAs(nats, 'proxy');
    await gateway.presence.put(record('north', 'gw-real'));
    await expect(proxy.presence.put(record('north', 'gw-attacker'))).rejects.toMatchObject({
      code: BusErrorCode.PERMISSION_DENIED,
    });
    await expect(proxy.presence.remove('north', 's-north')).rejects.toMatchObject({
      code: BusErrorCode.PERMISSION_DENIED,
    });
    expect(await gateway.presence.get('north')).toMatchObject({ gatewayId: 'gw-real' });
  });

  it('only the admin announces control events: a proxy and a gateway are refused, services still hear the admin', async () => {
    const gateway = await connectAs(nats, 'gateway');
    const proxy = await connectAs(nats, 'proxy');
    const admin = await connectAs(nats, 'admin');
    const heard: ControlEvent[] = [];
    const gatewayHeard: ControlEvent[] = [];
    proxy.control.subscribe((e) => heard.push(e));
    gateway.control.subscribe((e) => gatewayHeard.push(e));
    for (const bus of [proxy, gateway])
      await expect(
        bus.control.publish({ type: 'agent-revoked', agent: 'east', reason: 'forged' }),
      ).rejects.toMatchObject({ code: BusErrorCode.PERMISSION_DENIED });
    await admin.control.publish({ type: 'agent-kicked', agent: 'east', reason: 'admin' });
    // The admin's event is the first (and only) one heard: the forged ones never went out.
    await expect.poll(() => heard.length + gatewayHeard.length, { timeout: 5_000 }).toBe(2);
    expect([heard, gatewayHeard]).toEqual([
      [{ type: 'agent-kicked', agent: 'east', reason: 'admin' }],
      [{ type: 'agent-kicked', agent: 'east', reason: 'admin' }],
    ]);
  });

  it('every reading role replays and lists large buckets (flow control on the way)', async () => {
    const gateway = await connectAs(nats, 'gateway');
    const proxy = await connectAs(nats, 'proxy');
    const admin = await connectAs(nats, 'admin');
    // 15 000 agents with long names and 10 000 revoked tokens: JetStream asks each watcher, and
    // the admin's key listing, for flow-control answers on the way (a listing without them
    // comes back cut short after a 30 s stall).
    const agents = Array.from({ length: 15_000 }, (_, i) => `bulk-agent-${i}-`.padEnd(63, 'x'));
    const jtis = Array.from({ length: 10_000 }, (_, i) => `bulk-token-${i}`);
    const at = new Date().toISOString();
    for (let i = 0; i < agents.length; i += 1000)
      await Promise.all(agents.slice(i, i + 1000).map((a) => gateway.presence.put(record(a))));
    for (let i = 0; i < jtis.length; i += 1000)
      await Promise.all(
        jtis
          .slice(i, i + 1000)
          .map((jti) => admin.revocations.add({ kind: 'token', jti, reason: 'bulk', at })),
      );
    for (const [who, bus] of [
      ['gateway', gateway],
      ['proxy', proxy],
    ] as const) {
      const seen = new Set<string>();
      const stop = await bus.presence.watch((e) => {
        if (e.type === 'put') seen.add(e.record.agent);
      });
      expect(agents.filter((a) => !seen.has(a)).length, `${who} presence`).toBe(0);
      stop();
      const revoked = new Set<string>();
      const stopRevocations = await bus.revocations.watch((r) => {
        if (r.kind === 'token') revoked.add(r.jti);
      });
      expect(jtis.filter((j) => !revoked.has(j)).length, `${who} revocations`).toBe(0);
      stopRevocations();
    }
    const listed = new Set((await admin.presence.list()).map((r) => r.agent));
    expect(agents.filter((a) => !listed.has(a)).length, 'admin listing').toBe(0);
  }, 90_000);

  it('watches survive a NATS restart without a refused subject', async () => {
    const warnings: string[] = [];
    const gateway = await connectAs(nats, 'gateway', warnings);
    const proxy = await connectAs(nats, 'proxy', warnings);
    const admin = await connectAs(nats, 'admin', warnings);
    const agents = new Set<string>();
    const revoked = new Set<string>();
    const stops = [
      await gateway.presence.watch((e) => e.type === 'put' && agents.add(`gateway:${e.record.agent}`)),
      await proxy.presence.watch((e) => e.type === 'put' && agents.add(`proxy:${e.record.agent}`)),
      await gateway.revocations.watch((r) => r.kind === 'agent' && revoked.add(`gateway:${r.agent}`)),
      await proxy.revocations.watch((r) => r.kind === 'agent' && revoked.add(`proxy:${r.agent}`)),
    ];
    await nats.restart();
    // The watches come back by themselves (ordered consumers are recreated, the old ones removed).
    await expect
      .poll(
        async () => {
          await gateway.presence.put(record('after-restart'));
          await admin.revocations.add({ kind: 'agent', agent: 'after-restart', reason: 'x', at: 'now' });
          return [...agents, ...revoked].filter((s) => s.endsWith(':after-restart')).sort();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toEqual([
        'gateway:after-restart',
        'gateway:after-restart',
        'proxy:after-restart',
        'proxy:after-restart',
      ]);
    expect(warnings.filter((w) => /denied|permission/i.test(w))).toEqual([]);
    for (const stop of stops) stop();
  }, 60_000);

  it('refuses an unknown nkey and a client without credentials', async () => {
    const stranger = path.join(nats.dir, 'stranger.nk');
    writeFileSync(stranger, createNatsUserNkey().seed);
    await expect(
      connectNatsBus({
        servers: nats.url,
        name: 'stranger',
        security: natsConnectionSecurity(flags(nats, { natsNkeySeedPath: stranger })),
        creates: [],
      }),
    ).rejects.toMatchObject({ code: BusErrorCode.AUTH_REFUSED, message: /refused nkey U/ });
    await expect(
      connectNatsBus({
        servers: nats.url,
        name: 'anonymous',
        security: natsConnectionSecurity(flags(nats, { natsInsecure: true })),
        creates: [],
      }),
    ).rejects.toMatchObject({ code: BusErrorCode.AUTH_REFUSED, message: /requires credentials/ });
  });

  it('demanding TLS from a NATS without it fails at once, naming TLS', async () => {
    await expect(
      connectNatsBus({
        servers: nats.url.replace('nats://', 'tls://'),
        name: 'tls-wanted',
        security: natsConnectionSecurity(
          flags(nats, { natsUrl: nats.url.replace('nats://', 'tls://'), natsNkeySeedPath: nats.seeds.proxy }),
        ),
        creates: [],
      }),
    ).rejects.toMatchObject({ code: BusErrorCode.CONNECT_FAILED, message: /TLS to NATS .* failed/ });
  });
});

describe('services that only read a bucket nobody has created yet', () => {
  let nats: LockedNatsServer;
  beforeAll(async () => {
    nats = await startLockedNatsServer();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('read it as empty, and pick it up once its owner creates it', async () => {
    const warnings: string[] = [];
    const proxy = await connectAs(nats, 'proxy', warnings);
    const agents: string[] = [];
    // The watch's first replay completes although the bucket does not exist.
    const stopPresence = await proxy.presence.watch((e) => {
      if (e.type === 'put') agents.push(e.record.agent);
    });
    const revoked: string[] = [];
    const stopRevocations = await proxy.revocations.watch((r) =>
      revoked.push(r.kind === 'agent' ? r.agent : r.jti),
    );
    expect([agents, revoked, await proxy.presence.list(), await proxy.presence.get('east')]).toEqual([
      [],
      [],
      [],
      undefined,
    ]);
    expect(warnings.join('\n')).toMatch(/presence bucket pullplane-presence does not exist yet/);
    // A proxy may not create it.
    await expect(proxy.presence.put(record('east'))).rejects.toMatchObject({
      code: BusErrorCode.PERMISSION_DENIED,
    });
    const gateway = await connectAs(nats, 'gateway');
    await gateway.presence.put(record('east'));
    const admin = await connectAs(nats, 'admin');
    await admin.revocations.add({
      kind: 'agent',
      agent: 'west',
      reason: 'gone',
      at: new Date().toISOString(),
    });
    // The store watch (not only the control event) finds the buckets once they exist.
    await expect.poll(() => agents.includes('east'), { timeout: 15_000 }).toBe(true);
    await expect.poll(() => revoked.includes('west'), { timeout: 15_000 }).toBe(true);
    stopPresence();
    stopRevocations();
  });
});
