import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dial, startGateway } from './in-process.js';
import { makePki, type TestPki } from './support.js';

let pki: TestPki;
let api: FakeKubeApiServer;
let authority: TokenAuthority;
const bus = createMemoryBus();
let gw: Awaited<ReturnType<typeof startGateway>>;

beforeAll(async () => {
  pki = await makePki();
  api = await startFakeKubeApiServer();
  api.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  const kubeconfig = await api.writeKubeconfig(path.join(pki.dir, 'principal.kubeconfig'));
  authority = await TokenAuthority.generate({ audience: 'resource-proxy' });
  const key = path.join(pki.dir, 'proxy-jwt.key');
  writeFileSync(key, authority.exportPrivateKeyPem());
  gw = await startGateway(
    [
      `--tls-cert=${pki.serverCert}`,
      `--tls-key=${pki.serverKey}`,
      `--root-ca-path=${pki.ca}`,
      '--resource-proxy-url=https://argocd-agent-resource-proxy.argocd.svc:9090',
      `--registration-token-key-path=${key}`,
      `--registration-ca-path=${pki.ca}`,
      `--kubeconfig=${kubeconfig}`,
    ],
    bus,
  );
});
afterAll(async () => {
  await gw?.app.stop();
  await api?.close();
});

const tls = async (cn: string) => {
  const c = await pki.agent(cn);
  return credentials.createSsl(readFileSync(pki.ca), readFileSync(c.key), readFileSync(c.cert));
};

it('registers an agent as an Argo CD cluster on its first connection', async () => {
  expect((await dial(gw.port, await tls('agent-reg'))).welcome?.kind.case).toBe('welcome');
  const deadline = Date.now() + 5_000;
  let secret: { data: Record<string, string>; metadata: { labels: Record<string, string> } } | undefined;
  while (!secret && Date.now() < deadline) {
    secret = api.store.get({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: 'argocd',
      name: 'cluster-agent-reg',
    }) as typeof secret;
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
  expect(secret?.metadata.labels['argocd.argoproj.io/secret-type']).toBe('cluster');
  const decode = (s: string) => Buffer.from(s, 'base64').toString();
  expect(decode(secret!.data.server!)).toBe(
    'https://argocd-agent-resource-proxy.argocd.svc:9090/clusters/agent-reg',
  );
  const config = JSON.parse(decode(secret!.data.config!)) as {
    bearerToken: string;
    tlsClientConfig: { caData: string };
  };
  // The token is one the resource proxy accepts, and it covers this agent only.
  const token = await authority.verify(config.bearerToken);
  expect(token).toMatchObject({ agents: ['agent-reg'] });
  // It expires (--registration-token-ttl, 24 h by default), and the Secret says when, so the
  // gateway holding the agent renews it in time.
  expect(token.expiresAt!.getTime() - token.issuedAt.getTime()).toBe(24 * 3600_000);
  const annotations = (secret as unknown as { metadata: { annotations: Record<string, string> } }).metadata
    .annotations;
  expect(Date.parse(annotations['pullplane.io/credential-expires-at']!)).toBeLessThanOrEqual(
    token.expiresAt!.getTime(),
  );
  expect(
    token.expiresAt!.getTime() - Date.parse(annotations['pullplane.io/credential-expires-at']!),
  ).toBeLessThan(2_000);
  expect(decode(config.tlsClientConfig.caData)).toBe(readFileSync(pki.ca, 'utf8'));
});

it('refuses a revoked agent from then on, valid certificate or not', async () => {
  const creds = await tls('agent-rev');
  expect((await dial(gw.port, creds)).welcome?.kind.case).toBe('welcome');
  await bus.revocations.add({
    kind: 'agent',
    agent: 'agent-rev',
    reason: 'decommissioned',
    at: new Date().toISOString(),
  });
  // The revocation reaches the gateway over the bus: dial until it is refused.
  let again = await dial(gw.port, creds);
  await expect
    .poll(
      async () => {
        if (again.error === undefined) again = await dial(gw.port, creds);
        return again.error?.code;
      },
      { timeout: 10_000, interval: 50 },
    )
    .toBe(status.PERMISSION_DENIED);
  expect(again.error?.details).toMatch(/agent-rev has been revoked/);
  expect(
    gw.log.lines.some((l) => l.msg === 'revoked agent tried to connect' && l.agent === 'agent-rev'),
  ).toBe(true);
});

it('serves rotated certificates after a config-reload event, without a restart', async () => {
  const { connect } = await import('node:tls');
  const { issueCertificate } = await import('@pullplane/pki');
  const serial = () =>
    new Promise<string>((resolve, reject) => {
      const s = connect(
        {
          host: '127.0.0.1',
          port: gw.port,
          ca: readFileSync(pki.ca),
          servername: 'localhost',
          ALPNProtocols: ['h2'],
        },
        () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.destroy();
        },
      );
      s.on('error', reject);
    });
  const before = await serial();
  const next = await issueCertificate(
    { certPem: readFileSync(pki.ca, 'utf8'), keyPem: readFileSync(pki.caKey, 'utf8') },
    { commonName: 'gateway', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'both' },
  );
  writeFileSync(pki.serverCert, next.certPem);
  writeFileSync(pki.serverKey, next.keyPem);
  await bus.control.publish({ type: 'config-reload', service: 'stream-gateway' });
  await expect.poll(serial, { timeout: 3_000 }).not.toBe(before);
});
