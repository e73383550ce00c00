// The other ways in than the bundle's nkeys, against real nats-servers with the shipped role
// permissions: TLS with a CA and client certificates, passwords from files, client certificates
// as the identity (verify_and_map); and how bad settings and bad files are refused before any
// connection, naming the flag.
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { createTestPki, type LockedNatsServer, makeTempDir, startLockedNatsServer } from '@pullplane/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type BusBucket,
  BusError,
  BusErrorCode,
  connectNatsBus,
  createNatsUserNkey,
  type NatsSecurityFlags,
  natsConnectionSecurity,
  natsSecurityProblems,
  natsSecurityWarnings,
} from '../src/index.js';

const open: Bus[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});

const dir = makeTempDir('nats-credentials-');
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
};

async function connect(f: NatsSecurityFlags, creates: BusBucket[] = [], name = 'test'): Promise<Bus> {
  const bus = await connectNatsBus({
    servers: f.natsUrl,
    name,
    security: natsConnectionSecurity(f),
    creates,
    firstConnectTimeoutMs: 3_000,
  });
  open.push(bus);
  return bus;
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('TLS with a CA and client certificates, passwords from files', () => {
  let nats: LockedNatsServer;
  let files: Awaited<ReturnType<Awaited<ReturnType<typeof createTestPki>>['writeToDir']>>;
  const passwords = { gateway: 'gateway-pw-0b1e', proxy: 'proxy-pw-7f3a', admin: 'admin-pw-91c2' };
  beforeAll(async () => {
    const pki = await createTestPki();
    files = await pki.writeToDir(makeTempDir('nats-pki-'), {
      server: await pki.serverCert(['127.0.0.1', 'localhost']),
      client: await pki.clientCert('pullplane-client'),
    });
    nats = await startLockedNatsServer({
      authorization: `authorization {
        users = [
          { user: "gateway", password: "${passwords.gateway}", permissions: $PULLPLANE_GATEWAY }
          { user: "proxy", password: "${passwords.proxy}", permissions: $PULLPLANE_PROXY }
          { user: "admin", password: "${passwords.admin}", permissions: $PULLPLANE_ADMIN }
        ]
      }`,
      extraConfig: `tls {
        cert_file: "${files.files.server!.cert}"
        key_file: "${files.files.server!.key}"
        ca_file: "${files.caCert}"
        verify: true
      }`,
    });
  });
  afterAll(async () => {
    await nats?.stop();
  });

  const tlsFlags = (user: 'proxy' | 'admin', password: string): NatsSecurityFlags => ({
    natsUrl: nats.url,
    natsUser: user,
    natsPasswordPath: file(`${user}-${password}.pw`, `${password}\n`),
    natsTlsCaPath: files.caCert,
    natsTlsCertPath: files.files.client!.cert,
    natsTlsKeyPath: files.files.client!.key,
    natsInsecure: false,
  });

  it('lets the admin store a revocation and the proxy read it, over TLS', async () => {
    const admin = await connect(tlsFlags('admin', passwords.admin), ['revocations']);
    await admin.revocations.add({
      kind: 'agent',
      agent: 'east',
      reason: 'tls',
      at: new Date().toISOString(),
    });
    const proxy = await connect(tlsFlags('proxy', passwords.proxy));
    expect(await proxy.revocations.list()).toEqual([
      expect.objectContaining({ kind: 'agent', agent: 'east' }),
    ]);
    // The role still binds over TLS: the proxy may not write.
    expect(
      await refusal(proxy.revocations.add({ kind: 'token', jti: 'x', reason: 'x', at: 'now' })),
    ).toMatchObject({ code: BusErrorCode.PERMISSION_DENIED });
  });

  it('refuses a wrong password', async () => {
    expect(await refusal(connect(tlsFlags('proxy', 'not-the-password')))).toMatchObject({
      code: BusErrorCode.AUTH_REFUSED,
      message: expect.stringMatching(/refused user proxy .*Authorization Violation/),
    });
  });

  it("refuses the server's certificate without the CA that signed it, naming TLS", async () => {
    const { natsTlsCaPath: _, ...noCa } = tlsFlags('proxy', passwords.proxy);
    expect(await refusal(connect(noCa as NatsSecurityFlags))).toMatchObject({
      code: BusErrorCode.CONNECT_FAILED,
      message: expect.stringMatching(/TLS to NATS .* failed/),
    });
  });

  it('is refused by a server that verifies client certificates when it presents none', async () => {
    const { natsTlsCertPath: _c, natsTlsKeyPath: _k, ...noCert } = tlsFlags('proxy', passwords.proxy);
    // TLS 1.3 finishes the client's handshake before the server checks for a certificate: the
    // server then drops the connection and the client only sees its connect time out.
    const err = await refusal(connect(noCert as NatsSecurityFlags));
    expect(err).toBeInstanceOf(BusError);
    expect(err).toMatchObject({
      code: BusErrorCode.CONNECT_FAILED,
      message: expect.stringMatching(/drops a client without one: --nats-tls-cert-path/),
    });
  });
});

describe('a client certificate as the identity (verify_and_map)', () => {
  let nats: LockedNatsServer;
  let files: Awaited<ReturnType<Awaited<ReturnType<typeof createTestPki>>['writeToDir']>>;
  beforeAll(async () => {
    const pki = await createTestPki();
    files = await pki.writeToDir(makeTempDir('nats-pki-'), {
      server: await pki.serverCert(['127.0.0.1', 'localhost']),
      gateway: await pki.clientCert('pullplane-gateway'),
      stranger: await pki.clientCert('stranger'),
    });
    nats = await startLockedNatsServer({
      authorization: `authorization {
        users = [
          { user: "CN=pullplane-gateway", permissions: $PULLPLANE_GATEWAY }
          { user: "CN=pullplane-proxy", permissions: $PULLPLANE_PROXY }
          { user: "CN=pullplane-admin", permissions: $PULLPLANE_ADMIN }
        ]
      }`,
      extraConfig: `tls {
        cert_file: "${files.files.server!.cert}"
        key_file: "${files.files.server!.key}"
        ca_file: "${files.caCert}"
        verify_and_map: true
      }`,
    });
  });
  afterAll(async () => {
    await nats?.stop();
  });

  const certFlags = (who: 'gateway' | 'stranger'): NatsSecurityFlags => ({
    natsUrl: nats.url,
    natsTlsCaPath: files.caCert,
    natsTlsCertPath: files.files[who]!.cert,
    natsTlsKeyPath: files.files[who]!.key,
    natsInsecure: false,
  });

  it("needs nothing else: the certificate's subject is the user", async () => {
    expect(natsSecurityProblems(certFlags('gateway'))).toEqual([]);
    const gateway = await connect(certFlags('gateway'), ['presence']);
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
    expect(await gateway.presence.get('east')).toMatchObject({ gatewayId: 'gw-1' });
    expect(await refusal(connect(certFlags('stranger')))).toMatchObject({ code: BusErrorCode.AUTH_REFUSED });
  });
});

describe('a rotated seed', () => {
  let nats: LockedNatsServer;
  beforeAll(async () => {
    nats = await startLockedNatsServer();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  it('is read again when the connection comes back', async () => {
    const seed = path.join(dir, 'rotating.nk');
    copyFileSync(nats.seeds.gateway, seed);
    const bus = await connect({ natsUrl: nats.url, natsNkeySeedPath: seed, natsInsecure: false }, [
      'presence',
    ]);
    const r = (agent: string) => ({
      agent,
      gatewayId: 'gw-1',
      internalAddress: '10.0.0.1:8444',
      sessionId: 's1',
      connectedAt: 'now',
      lastHeartbeat: 'now',
      agentVersion: '1',
      protocolVersion: 1,
    });
    await bus.presence.put(r('before'));
    // The file now holds another identity (the proxy's, which may not write presence): after a
    // reconnect the connection is that identity.
    copyFileSync(nats.seeds.proxy, seed);
    await nats.restart();
    await expect
      .poll(() => refusal(bus.presence.put(r('after'))), { timeout: 15_000, interval: 250 })
      .toMatchObject({ code: BusErrorCode.PERMISSION_DENIED });
    expect(await bus.presence.get('before')).toMatchObject({ agent: 'before' });
  }, 30_000);
});

describe('settings and files', () => {
  const base: NatsSecurityFlags = { natsUrl: 'nats://127.0.0.1:4222', natsInsecure: false };

  it('refuses going without an identity unless --nats-insecure, which it warns about', () => {
    expect(natsSecurityProblems(base)).toEqual([
      expect.stringMatching(
        /without credentials anyone who reaches it can rewrite both.*--nats-nkey-seed-path.*--nats-insecure/,
      ),
    ]);
    expect(() => natsConnectionSecurity(base)).toThrow(
      expect.objectContaining({ code: BusErrorCode.NO_CREDENTIALS }),
    );
    const insecure = { ...base, natsInsecure: true };
    expect(natsSecurityProblems(insecure)).toEqual([]);
    expect(natsConnectionSecurity(insecure).identity).toBe('none');
    expect(natsSecurityWarnings(insecure)).toEqual([expect.stringMatching(/^INSECURE: --nats-insecure/)]);
  });

  it('names contradictory and incomplete settings', () => {
    const seed = file('ok.nk', createNatsUserNkey().seed);
    expect(
      natsSecurityProblems({ ...base, natsNkeySeedPath: seed, natsCredsPath: seed, natsInsecure: true }),
    ).toEqual([
      'choose one NATS identity: --nats-nkey-seed-path, --nats-creds-path are all set',
      '--nats-insecure (no credentials) contradicts the NATS credentials given: drop one',
    ]);
    expect(natsSecurityProblems({ ...base, natsUser: 'u' })).toEqual([
      '--nats-user needs --nats-password-path (or --nats-password)',
    ]);
    expect(natsSecurityProblems({ ...base, natsPassword: 'p', natsInsecure: true })).toEqual([
      'a NATS password needs --nats-user',
    ]);
    expect(natsSecurityProblems({ ...base, natsTlsCertPath: seed })).toEqual([
      '--nats-tls-cert-path and --nats-tls-key-path go together',
    ]);
    // A password without TLS is allowed, with a warning; an nkey sends no secret.
    expect(natsSecurityWarnings({ ...base, natsUser: 'u', natsPassword: 'p' })).toEqual([
      expect.stringMatching(/password is not required to travel over TLS/),
    ]);
    expect(natsSecurityWarnings({ ...base, natsNkeySeedPath: seed })).toEqual([]);
  });

  it.each([
    ['natsNkeySeedPath', 'nats-nkey-seed-path', 'garbage', /not an nkey seed/],
    ['natsNkeySeedPath', 'nats-nkey-seed-path', 'SAAGCPEQTBE3DUMMY', /not an nkey seed/],
    ['natsCredsPath', 'nats-creds-path', 'no sections here', /not a NATS credentials file/],
    ['natsTlsCaPath', 'nats-tls-ca-path', 'not pem', /holds no PEM CERTIFICATE/],
  ] as const)('refuses a bad %s file, naming --%s', (key, flag, content, message) => {
    const p = file(`bad-${flag}`, content);
    const flags = {
      ...base,
      ...(key === 'natsTlsCaPath' ? { natsNkeySeedPath: file('ok2.nk', createNatsUserNkey().seed) } : {}),
      [key]: p,
    };
    expect(() => natsConnectionSecurity(flags)).toThrow(
      expect.objectContaining({
        code: BusErrorCode.CREDENTIALS_INVALID,
        message: expect.stringContaining(`--${flag}`),
      }),
    );
    expect(() => natsConnectionSecurity(flags)).toThrow(message);
  });

  it('refuses an account seed (it would not be a user) and an empty password file', () => {
    // A valid seed of another type: an account's.
    const account = new TextDecoder().decode(nkeys.createAccount().getSeed());
    expect(() => natsConnectionSecurity({ ...base, natsNkeySeedPath: file('account.nk', account) })).toThrow(
      /--nats-nkey-seed-path: .*not an nkey \*user\* seed/,
    );
    expect(() =>
      natsConnectionSecurity({ ...base, natsUser: 'u', natsPasswordPath: file('empty.pw', '\n') }),
    ).toThrow(/--nats-password-path: .*the password file is empty/);
    expect(() => natsConnectionSecurity({ ...base, natsNkeySeedPath: path.join(dir, 'missing.nk') })).toThrow(
      /--nats-nkey-seed-path: cannot read .*missing\.nk/,
    );
  });
});
