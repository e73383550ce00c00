import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { AGENT_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { type GatewayService, validateGatewayConfig } from '@pullplane/gateway';
import { createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import { AGENT_TUNNEL_CONNECT_PATH, decodeFrame, encodeFrame, type Frame, frame } from '@pullplane/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../src/options.js';
import { dial, startGateway } from './in-process.js';
import { makePki, type TestPki } from './support.js';

let pki: TestPki;
beforeAll(async () => {
  pki = await makePki();
});

describe('mTLS agent authentication', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  beforeAll(async () => {
    gw = await startGateway([
      `--tls-cert=${pki.serverCert}`,
      `--tls-key=${pki.serverKey}`,
      `--root-ca-path=${pki.ca}`,
    ]);
  });
  afterAll(() => gw.app.stop());

  const tlsCreds = (cert?: string, key?: string) =>
    credentials.createSsl(
      readFileSync(pki.ca),
      key ? readFileSync(key) : null,
      cert ? readFileSync(cert) : null,
    );

  it('accepts a certificate from the agent CA and names the agent by its CN', async () => {
    const c = await pki.agent('agent-a');
    const out = await dial(gw.port, tlsCreds(c.cert, c.key));
    expect(out.welcome?.kind.case).toBe('welcome');
    expect(gw.log.lines.some((l) => l.msg === 'agent connected' && l.agent === 'agent-a')).toBe(true);
  });

  it.each([
    ['a certificate from another CA', 'foreign', /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i],
    ['an expired certificate', 'expired', /CERT_HAS_EXPIRED/],
    ['no certificate', 'none', /no client certificate presented/],
  ])('rejects %s with a clear log line', async (_what, kind, reason) => {
    let creds = tlsCreds();
    if (kind !== 'none') {
      const ca =
        kind === 'foreign'
          ? await createCertificateAuthority({ commonName: 'attacker-ca' })
          : {
              certPem: readFileSync(pki.ca, 'utf8'),
              keyPem: readFileSync(path.join(pki.dir, 'ca.key'), 'utf8'),
            };
      const leaf = await issueCertificate(ca, {
        commonName: 'agent-a',
        usage: 'client',
        ...(kind === 'expired'
          ? { notBefore: new Date(Date.now() - 86_400_000 * 2), notAfter: new Date(Date.now() - 86_400_000) }
          : {}),
      });
      const cert = path.join(pki.dir, `${kind}.crt`);
      const key = path.join(pki.dir, `${kind}.key`);
      writeFileSync(cert, leaf.certPem);
      writeFileSync(key, leaf.keyPem);
      creds = tlsCreds(cert, key);
    }
    const before = gw.log.lines.length;
    const out = await dial(gw.port, creds);
    expect(out.welcome).toBeUndefined();
    expect(out.error?.code).toBe(status.UNAVAILABLE);
    const rejection = gw.log.lines
      .slice(before)
      .find((l) => l.msg === 'rejected TLS client: client certificate not accepted');
    expect(rejection?.reason).toMatch(reason);
  });

  it('rejects an agent whose Hello names someone else', async () => {
    const c = await pki.agent('agent-b');
    const out = await dial(gw.port, tlsCreds(c.cert, c.key), new Metadata(), { agentName: 'agent-c' });
    expect(out.error?.code).toBe(status.PERMISSION_DENIED);
    expect(out.error?.details).toMatch(/calls itself "agent-c" but authenticated as "agent-b"/);
  });

  it('names both protocol versions when they are incompatible', async () => {
    const c = await pki.agent('agent-d');
    const out = await dial(gw.port, tlsCreds(c.cert, c.key), new Metadata(), { min: 7, max: 9 });
    expect(out.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(out.error?.details).toBe('incompatible tunnel protocol: peer speaks v7-9, this side speaks v1-2');
  });
});

describe('header authentication behind a mesh', () => {
  let istio: Awaited<ReturnType<typeof startGateway>>;
  let linkerd: Awaited<ReturnType<typeof startGateway>>;
  beforeAll(async () => {
    const pinned = [
      '--mesh-trust-domain=cluster.local',
      '--mesh-agent-namespaces=argocd',
      '--internal-mesh-namespaces=argocd',
      '--internal-allowed-clients=argocd-agent-resource-proxy',
    ];
    istio = await startGateway(['--insecure-plaintext', '--auth=istio', '--internal-auth=istio', ...pinned]);
    linkerd = await startGateway([
      '--insecure-plaintext',
      '--auth=linkerd',
      '--internal-auth=linkerd',
      ...pinned,
    ]);
  });
  afterAll(async () => {
    await istio.app.stop();
    await linkerd.app.stop();
  });
  const md = (pairs: Array<[string, string]>) => {
    const m = new Metadata();
    for (const [k, v] of pairs) m.add(k, v);
    return m;
  };
  const xfcc = 'x-forwarded-client-cert';
  const hash = 'a'.repeat(64);

  it('accepts a real Istio XFCC value, naming the agent by its service account', async () => {
    const value = `By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-principal;Hash=${hash};Subject="";URI=spiffe://cluster.local/ns/argocd/sa/agent-east`;
    const out = await dial(istio.port, undefined, md([[xfcc, value]]));
    expect(out.welcome?.kind.case).toBe('welcome');
    expect(istio.log.lines.some((l) => l.msg === 'agent connected' && l.agent === 'agent-east')).toBe(true);
  });

  it('accepts a real Linkerd l5d-client-id value', async () => {
    const out = await dial(
      linkerd.port,
      undefined,
      md([['l5d-client-id', 'agent-west.argocd.serviceaccount.identity.linkerd.cluster.local']]),
    );
    expect(out.welcome?.kind.case).toBe('welcome');
  });

  const hostileXfcc: Array<[string, Array<[string, string]>]> = [
    ['missing header', []],
    [
      'quoted Subject faking a URI',
      [
        [
          xfcc,
          `By=spiffe://cluster.local/ns/argocd/sa/p;Hash=${hash};Subject="CN=x,URI=spiffe://cluster.local/ns/argocd/sa/evil"`,
        ],
      ],
    ],
    ['By= only', [[xfcc, 'By=spiffe://cluster.local/ns/argocd/sa/agent-a']]],
    [
      'URI only in an earlier element',
      [[xfcc, `URI=spiffe://cluster.local/ns/argocd/sa/agent-a,By=spiffe://x/ns/y/sa/p;Hash=${hash}`]],
    ],
    ['empty service account', [[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/;DNS=x']]],
    ['uppercase name', [[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/Agent-A']]],
    ['underscore name', [[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent_a']]],
    ['name over 63 characters', [[xfcc, `URI=spiffe://cluster.local/ns/argocd/sa/${'a'.repeat(64)}`]]],
    [
      'repeated header',
      [
        [xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent-a'],
        [xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent-b'],
      ],
    ],
    ['unterminated quote', [[xfcc, 'Subject="CN=x;URI=spiffe://cluster.local/ns/argocd/sa/agent-a']]],
    [
      'oversized value',
      [[xfcc, `URI=spiffe://cluster.local/ns/argocd/sa/agent-a;DNS=${'x'.repeat(20_000)}`]],
    ],
    ['percent-encoded name', [[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent%2Da']]],
  ];
  it.each(hostileXfcc)('rejects an Istio agent with %s', async (_what, pairs) => {
    const out = await dial(istio.port, undefined, md(pairs));
    expect(out.welcome).toBeUndefined();
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
    expect(out.error?.details).toMatch(/^authentication failed: unable to extract identity/);
  });

  const hostileL5d: Array<[string, Array<[string, string]>]> = [
    ['missing header', []],
    ['bare name', [['l5d-client-id', 'agent-a']]],
    ['uppercase', [['l5d-client-id', 'Agent-A.argocd.serviceaccount.identity.linkerd.cluster.local']]],
    [
      'two values',
      [
        ['l5d-client-id', 'a.argocd.serviceaccount.identity.linkerd.cluster.local'],
        ['l5d-client-id', 'b.argocd.serviceaccount.identity.linkerd.cluster.local'],
      ],
    ],
    ['empty', [['l5d-client-id', '']]],
    ['leading dot', [['l5d-client-id', '.argocd.serviceaccount.identity.linkerd.cluster.local']]],
  ];
  it.each(hostileL5d)('rejects a Linkerd agent with %s', async (_what, pairs) => {
    const out = await dial(linkerd.port, undefined, md(pairs));
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
  });

  it('ends a tunnel that sends malformed protobuf with a clear error, and keeps serving others', async () => {
    const { Client } = await import('@grpc/grpc-js');
    const { AGENT_TUNNEL_CONNECT_PATH, encodeFrame, frame } = await import('@pullplane/proto');
    const client = new Client(
      `127.0.0.1:${istio.port}`,
      (await import('@grpc/grpc-js')).credentials.createInsecure(),
    );
    const call = client.makeBidiStreamRequest<Buffer, Buffer>(
      AGENT_TUNNEL_CONNECT_PATH,
      (b) => b,
      (b) => b,
      md([[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent-garbage']]),
    );
    const ended = new Promise<{ code: number; details: string }>((resolve) => call.on('error', resolve));
    call.on('data', () => {
      // Welcome arrived: now send bytes that are not a Frame.
      call.write(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
    });
    call.write(
      encodeFrame(
        frame({
          case: 'hello',
          value: {
            minProtocolVersion: 1,
            maxProtocolVersion: 1,
            agentVersion: 't',
            heartbeatIntervalMs: 30_000,
          },
        }),
      ),
    );
    const err = await ended;
    client.close();
    expect(err.code).toBe(status.INTERNAL);
    const ok = await dial(
      istio.port,
      undefined,
      md([[xfcc, 'URI=spiffe://cluster.local/ns/argocd/sa/agent-after']]),
    );
    expect(ok.welcome?.kind.case).toBe('welcome');
  });

  it('never trusts identity headers on a plaintext listener outside loopback', () => {
    const mesh = [
      '--mesh-trust-domain=cluster.local',
      '--mesh-agent-namespaces=argocd',
      '--internal-mesh-namespaces=argocd',
      '--internal-allowed-clients=argocd-agent-resource-proxy',
      // These checks are about the listeners; NATS is not used.
      '--nats-insecure',
    ];
    const { config } = loadConfig(gatewayOptions, {
      argv: ['--insecure-plaintext', '--auth=istio', '--internal-auth=istio', ...mesh],
      env: {},
    });
    expect(validateGatewayConfig(config).join('\n')).toMatch(
      /lets anyone who reaches the port forge identity headers/,
    );
    const allowed = loadConfig(gatewayOptions, {
      argv: [
        '--insecure-plaintext',
        '--auth=istio',
        '--internal-auth=istio',
        '--allow-insecure-non-loopback',
        ...mesh,
      ],
      env: {},
    });
    expect(validateGatewayConfig(allowed.config)).toEqual([]);
    const mtlsPlain = loadConfig(gatewayOptions, {
      argv: ['--insecure-plaintext', '--listen-host=127.0.0.1'],
      env: {},
    });
    expect(validateGatewayConfig(mtlsPlain.config).join('\n')).toMatch(/requires a mesh identity header/);
  });
});

describe('token authentication', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let authority: TokenAuthority;
  let app: GatewayService;
  let bus: Bus;
  beforeAll(async () => {
    bus = createMemoryBus();
    authority = await TokenAuthority.generate({ audience: AGENT_TOKEN_AUDIENCE });
    const keyPath = path.join(pki.dir, 'jwt.key');
    writeFileSync(keyPath, authority.exportPrivateKeyPem());
    gw = await startGateway(
      [
        `--tls-cert=${pki.serverCert}`,
        `--tls-key=${pki.serverKey}`,
        `--root-ca-path=${pki.ca}`,
        '--auth=token',
        `--token-key-path=${keyPath}`,
      ],
      bus,
    );
    app = gw.app;
  });
  afterAll(() => app.stop());
  const bearer = (t: string) => {
    const m = new Metadata();
    m.set('authorization', `Bearer ${t}`);
    return m;
  };
  const tls = () => credentials.createSsl(readFileSync(pki.ca));

  it('accepts a token issued for the agent and rejects a forged one', async () => {
    const ok = await dial(gw.port, tls(), bearer(await authority.issue('agent-t')));
    expect(ok.welcome?.kind.case).toBe('welcome');
    const forger = await TokenAuthority.generate();
    const bad = await dial(gw.port, tls(), bearer(await forger.issue('agent-t')));
    expect(bad.error?.code).toBe(status.UNAUTHENTICATED);
    const none = await dial(gw.port, tls());
    expect(none.error?.code).toBe(status.UNAUTHENTICATED);
  });

  it('closes the tunnel a token opened once that token is revoked, and only that one', async () => {
    const revokedToken = await authority.issue('agent-r');
    const jti = (await authority.verify(revokedToken)).jti;
    const revoked = await holdTunnel(gw.port, tls(), bearer(revokedToken));
    const kept = await holdTunnel(gw.port, tls(), bearer(await authority.issue('agent-k')));
    expect(
      app
        .gateway!.sessions()
        .map((s) => s.agent)
        .sort(),
    ).toEqual(['agent-k', 'agent-r']);
    await bus.control.publish({ type: 'token-denied', jti });
    // The event: the gateway ended agent-r's tunnel (its streams with it), and says why.
    await revoked.ended;
    expect(gw.log.lines.find((l) => l.msg === 'agent token revoked; tunnel closed')).toMatchObject({
      agent: 'agent-r',
      jti,
    });
    // Kicked in the same pass: agent-k, opened with another token, is still there after it.
    expect(app.gateway!.sessions().map((s) => s.agent)).toEqual(['agent-k']);
    const again = await dial(gw.port, tls(), bearer(revokedToken));
    expect(again.error?.code).toBe(status.UNAUTHENTICATED);
    expect(again.error?.details).toMatch(/has been revoked/);
    kept.close();
  });
});

/** An agent's tunnel held open after its Welcome; `ended` settles when the gateway ends it. */
async function holdTunnel(port: number, creds: ReturnType<typeof credentials.createSsl>, md: Metadata) {
  const client = new Client(`127.0.0.1:${port}`, creds, { 'grpc.ssl_target_name_override': 'localhost' });
  const call = client.makeBidiStreamRequest<Frame, Frame>(
    AGENT_TUNNEL_CONNECT_PATH,
    encodeFrame,
    decodeFrame,
    md,
  );
  call.write(
    frame({
      case: 'hello',
      value: {
        minProtocolVersion: 1,
        maxProtocolVersion: 1,
        agentName: '',
        agentVersion: 'test',
        heartbeatIntervalMs: 30_000,
      },
    }),
  );
  const ended = new Promise<ServiceError | undefined>((resolve) => {
    call.on('error', (err: ServiceError) => resolve(err));
    call.on('end', () => resolve(undefined));
  });
  await new Promise<void>((resolve, reject) => {
    call.once('data', (f: Frame) =>
      f.kind.case === 'welcome' ? resolve() : reject(new Error(`expected a Welcome, got ${f.kind.case}`)),
    );
    call.once('error', reject);
  });
  call.on('data', () => undefined);
  return {
    ended,
    close() {
      call.cancel();
      client.close();
    },
  };
}
