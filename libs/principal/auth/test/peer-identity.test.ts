import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { type CertificateAuthority, createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import { beforeAll, describe, expect, it } from 'vitest';
import { identityFromPeerCertificate, type MtlsAuthMethod, parseAuthMethod } from '../src/index.js';

const mtls = (spec: string): MtlsAuthMethod => {
  const method = parseAuthMethod(spec);
  if (method.kind !== 'mtls') throw new Error(`${spec} is not an mtls method`);
  return method;
};
const byCn = mtls('mtls');
const bySubject = mtls('mtls:CN=([^,]+)');
const byUri = mtls('mtls:uri:^spiffe://[^/]+/ns/[^/]+/sa/([^/]+)$');

let ca: CertificateAuthority;
let server: { certPem: string; keyPem: string };

beforeAll(async () => {
  ca = await createCertificateAuthority({ commonName: 'agents CA' });
  server = await issueCertificate(ca, { commonName: 'gateway', dnsNames: ['localhost'], usage: 'server' });
});

async function clientCert(commonName: string, uris: string[] = []): Promise<X509Certificate> {
  const issued = await issueCertificate(ca, { commonName, uris, usage: 'client' });
  return new X509Certificate(issued.certPem);
}

/** What a TLS server sees as the peer certificate after a real mutual-TLS handshake. */
async function peerOverTls(commonName: string, uris: string[]): Promise<tls.PeerCertificate> {
  const client = await issueCertificate(ca, { commonName, uris, usage: 'client' });
  const tlsServer = tls.createServer({
    cert: server.certPem,
    key: server.keyPem,
    ca: [ca.certPem],
    requestCert: true,
    rejectUnauthorized: true,
  });
  const peer = new Promise<tls.PeerCertificate>((resolve) => {
    tlsServer.on('secureConnection', (socket) => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
  });
  tlsServer.listen(0, '127.0.0.1');
  await once(tlsServer, 'listening');
  const socket = tls.connect({
    host: '127.0.0.1',
    servername: 'localhost',
    port: (tlsServer.address() as AddressInfo).port,
    ca: [ca.certPem],
    cert: client.certPem,
    key: client.keyPem,
  });
  socket.on('error', () => {});
  try {
    return await peer;
  } finally {
    socket.destroy();
    tlsServer.close();
  }
}

describe('identityFromPeerCertificate', () => {
  it('reads the CN, subject and URI SAN from a real TLS peer certificate', async () => {
    const peer = await peerOverTls('agent-a', ['spiffe://cluster.local/ns/argocd/sa/agent-b']);
    expect(identityFromPeerCertificate(byCn, peer)).toEqual({
      ok: true,
      identity: { agent: 'agent-a', via: 'mtls', evidence: 'CN=agent-a' },
    });
    expect(identityFromPeerCertificate(bySubject, peer)).toMatchObject({
      ok: true,
      identity: { agent: 'agent-a' },
    });
    expect(identityFromPeerCertificate(byUri, peer)).toEqual({
      ok: true,
      identity: { agent: 'agent-b', via: 'mtls', evidence: 'spiffe://cluster.local/ns/argocd/sa/agent-b' },
    });
  });

  it('accepts a crypto X509Certificate too', async () => {
    const cert = await clientCert('agent-c');
    expect(identityFromPeerCertificate(byCn, cert)).toMatchObject({
      ok: true,
      identity: { agent: 'agent-c' },
    });
  });

  it('uses the first matching URI SAN', async () => {
    const cert = await clientCert('x', [
      'https://example.com/a',
      'spiffe://td/ns/n/sa/first',
      'spiffe://td/ns/n/sa/second',
    ]);
    expect(identityFromPeerCertificate(byUri, cert)).toMatchObject({
      ok: true,
      identity: { agent: 'first' },
    });
  });

  it('rejects a missing or unreadable certificate', () => {
    expect(identityFromPeerCertificate(byCn, {})).toMatchObject({
      ok: false,
      code: 'AUTH_PEER_CERT_MISSING',
    });
    expect(identityFromPeerCertificate(byCn, null)).toMatchObject({
      ok: false,
      code: 'AUTH_PEER_CERT_MISSING',
    });
    expect(identityFromPeerCertificate(byCn, undefined)).toMatchObject({
      ok: false,
      code: 'AUTH_PEER_CERT_MISSING',
    });
    const garbage = { raw: Buffer.from('not a certificate') } as unknown as tls.PeerCertificate;
    expect(identityFromPeerCertificate(byCn, garbage)).toMatchObject({
      ok: false,
      code: 'AUTH_PEER_CERT_INVALID',
    });
  });

  it('rejects names that are not DNS labels', async () => {
    for (const cn of ['Agent-A', 'agent_a', 'agent.a', 'a'.repeat(64), '-agent', 'agent a']) {
      const result = identityFromPeerCertificate(byCn, await clientCert(cn));
      expect(result).toMatchObject({ ok: false, code: 'AUTH_INVALID_AGENT_NAME' });
    }
    const cyrillic = identityFromPeerCertificate(byCn, await clientCert('\u0430gent-a'));
    expect(cyrillic).toMatchObject({ ok: false, code: 'AUTH_INVALID_AGENT_NAME' });
    expect(!cyrillic.ok && cyrillic.reason).toContain('\\u0430gent-a');
    const uri = identityFromPeerCertificate(byUri, await clientCert('x', ['spiffe://td/ns/n/sa/Agent_A']));
    expect(uri).toMatchObject({ ok: false, code: 'AUTH_INVALID_AGENT_NAME' });
  });

  it('rejects certificates the pattern does not match', async () => {
    const plain = await clientCert('agent-a');
    expect(identityFromPeerCertificate(byUri, plain)).toMatchObject({
      ok: false,
      code: 'AUTH_NO_MATCH',
      reason: 'unable to extract identity: client certificate has no URI SAN',
    });
    expect(identityFromPeerCertificate(mtls('mtls:O=([^,]+)'), plain)).toMatchObject({
      ok: false,
      code: 'AUTH_NO_MATCH',
    });
    const other = await clientCert('x', ['https://example.com/sa/agent-a']);
    expect(identityFromPeerCertificate(byUri, other)).toMatchObject({ ok: false, code: 'AUTH_NO_MATCH' });
    expect(
      identityFromPeerCertificate(mtls('mtls:^CN=agent-([a-z]*)$'), await clientCert('agent-')),
    ).toMatchObject({
      ok: false,
      code: 'AUTH_EMPTY_CAPTURE',
    });
  });

  it('matches the subject as an escaped RFC 4514 string', async () => {
    // A CN that tries to inject a second RDN stays one escaped value.
    const cert = await clientCert('x,CN=evil');
    expect(identityFromPeerCertificate(bySubject, cert)).toMatchObject({
      ok: false,
      code: 'AUTH_INVALID_AGENT_NAME',
    });
    expect(identityFromPeerCertificate(mtls('mtls:^CN=([^,]+)$'), cert)).toMatchObject({
      ok: false,
      code: 'AUTH_NO_MATCH',
    });
  });
});

describe('credential kinds', () => {
  const agentOnly = { expect: 'agent' as const };
  const kinded = async (cn: string, kind: 'agent' | 'caller' | 'proxy') =>
    new X509Certificate((await issueCertificate(ca, { commonName: cn, usage: 'client', kind })).certPem);

  it('accepts a certificate of the expected kind for the same name, and says so', async () => {
    expect(identityFromPeerCertificate(byCn, await kinded('agent-a', 'agent'), agentOnly)).toMatchObject({
      ok: true,
      identity: { agent: 'agent-a', kind: 'agent' },
    });
    // The kind marker is read alongside any other identity method, e.g. a subject regex.
    expect(identityFromPeerCertificate(bySubject, await kinded('agent-a', 'agent'), agentOnly)).toMatchObject(
      { ok: true, identity: { agent: 'agent-a', kind: 'agent' } },
    );
  });

  it.each([
    ['caller', 'AUTH_CREDENTIAL_WRONG_KIND', /is a caller credential; only agent credentials/],
    ['proxy', 'AUTH_CREDENTIAL_WRONG_KIND', /is a proxy credential/],
  ] as const)('refuses a %s certificate where agents are expected', async (kind, code, reason) => {
    const result = identityFromPeerCertificate(byCn, await kinded('agent-a', kind), agentOnly);
    expect(result).toMatchObject({ ok: false, code });
    expect(!result.ok && result.reason).toMatch(reason);
  });

  it('refuses a certificate without a kind unless unmarked ones are allowed, naming the fix', async () => {
    const plain = await clientCert('agent-a');
    const refused = identityFromPeerCertificate(byCn, plain, {
      expect: 'agent',
      unmarkedHint: 'pass --allow-legacy-agent-certs',
    });
    expect(refused).toMatchObject({ ok: false, code: 'AUTH_CREDENTIAL_KIND_MISSING' });
    expect(!refused.ok && refused.reason).toMatch(
      /spiffe:\/\/pullplane\/agent\/agent-a.*pass --allow-legacy-agent-certs/,
    );
    expect(identityFromPeerCertificate(byCn, plain, { expect: 'agent', allowUnmarked: true })).toMatchObject({
      ok: true,
      identity: { agent: 'agent-a', kind: 'unmarked' },
    });
    // Allowing unmarked certificates never lets another kind through.
    expect(
      identityFromPeerCertificate(byCn, await kinded('agent-a', 'caller'), {
        expect: 'agent',
        allowUnmarked: true,
      }),
    ).toMatchObject({ ok: false, code: 'AUTH_CREDENTIAL_WRONG_KIND' });
  });

  it.each([
    ['a marker for another name', ['spiffe://pullplane/agent/agent-b'], 'AUTH_CREDENTIAL_NAME_MISMATCH'],
    [
      'two markers',
      ['spiffe://pullplane/agent/agent-a', 'spiffe://pullplane/caller/agent-a'],
      'AUTH_CREDENTIAL_KIND_INVALID',
    ],
    ['an unknown kind', ['spiffe://pullplane/admin/agent-a'], 'AUTH_CREDENTIAL_KIND_INVALID'],
    [
      'a marker with a path after the name',
      ['spiffe://pullplane/agent/agent-a/x'],
      'AUTH_CREDENTIAL_KIND_INVALID',
    ],
    ['an upper-case marker', ['SPIFFE://pullplane/agent/agent-a'], 'AUTH_CREDENTIAL_KIND_INVALID'],
  ])('refuses %s', async (_what, uris, code) => {
    const cert = await clientCert('agent-a', uris);
    expect(identityFromPeerCertificate(byCn, cert, { expect: 'agent', allowUnmarked: true })).toMatchObject({
      ok: false,
      code,
    });
  });
});
