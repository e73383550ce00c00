import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  describeCertificate,
  issueCertificate,
  PkiError,
  type PkiErrorCode,
} from '../src/index.js';
import { handshake } from './tls-harness.js';

const DAY = 24 * 60 * 60 * 1000;

async function expectPkiError(
  promise: Promise<unknown> | (() => unknown),
  code: PkiErrorCode,
): Promise<void> {
  const run = typeof promise === 'function' ? Promise.resolve().then(promise) : promise;
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PkiError);
  expect((err as PkiError).code).toBe(code);
}

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
let server: { certPem: string; keyPem: string };

beforeAll(async () => {
  ca = await createCertificateAuthority({ commonName: 'pullplane test CA' });
  otherCa = await createCertificateAuthority({ commonName: 'someone else CA' });
  server = await issueCertificate(ca, {
    commonName: 'stream-gateway',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
    usage: 'server',
  });
});

describe('createCertificateAuthority', () => {
  it('creates a self-signed CA certificate usable for signing', async () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=pullplane test CA');
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    const text = cert.toLegacyObject();
    expect(text.subject.CN).toBe('pullplane test CA');
    const info = describeCertificate(ca.certPem);
    expect(info.isCertificateAuthority).toBe(true);
    expect(info.commonName).toBe('pullplane test CA');
    expect(info.notAfter.getTime() - Date.now()).toBeGreaterThan(3000 * DAY);
  });

  it('exports the key as PKCS#8 PEM matching the certificate', () => {
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const key = createPrivateKey(ca.keyPem);
    expect(new X509Certificate(ca.certPem).checkPrivateKey(key)).toBe(true);
  });

  it('honours explicit validity dates', async () => {
    const notBefore = new Date('2030-01-01T00:00:00Z');
    const notAfter = new Date('2031-01-01T00:00:00Z');
    const future = await createCertificateAuthority({ commonName: 'future', notBefore, notAfter });
    const info = describeCertificate(future.certPem);
    expect(info.notBefore.toISOString()).toBe(notBefore.toISOString());
    expect(info.notAfter.toISOString()).toBe(notAfter.toISOString());
  });

  it('rejects bad input with typed errors', async () => {
    await expectPkiError(createCertificateAuthority({ commonName: '' }), 'PKI_INVALID_INPUT');
    await expectPkiError(createCertificateAuthority({ commonName: 'x'.repeat(65) }), 'PKI_INVALID_INPUT');
    await expectPkiError(createCertificateAuthority({ commonName: 'a\nb' }), 'PKI_INVALID_INPUT');
    await expectPkiError(
      createCertificateAuthority({ commonName: 'ca', validityDays: 0 }),
      'PKI_INVALID_VALIDITY',
    );
    await expectPkiError(
      createCertificateAuthority({
        commonName: 'ca',
        notBefore: new Date(),
        notAfter: new Date(Date.now() - DAY),
      }),
      'PKI_INVALID_VALIDITY',
    );
    await expectPkiError(
      createCertificateAuthority({ commonName: 'ca', serialNumber: 'xyz' }),
      'PKI_INVALID_SERIAL',
    );
    await expectPkiError(
      createCertificateAuthority({ commonName: 'ca', serialNumber: '000' }),
      'PKI_INVALID_SERIAL',
    );
  });
});

describe('issueCertificate', () => {
  it('sets SANs, EKU, serial and issuer, and chains to the CA', async () => {
    const leaf = await issueCertificate(ca, {
      commonName: 'agent-a',
      dnsNames: ['agent-a.example.com'],
      uris: ['spiffe://cluster.local/ns/argocd/sa/agent-a'],
      usage: 'both',
      serialNumber: '0A1B2C',
    });
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.issuer).toBe('CN=pullplane test CA');
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(cert.subjectAltName).toBe(
      'DNS:agent-a.example.com, URI:spiffe://cluster.local/ns/argocd/sa/agent-a',
    );
    expect(cert.serialNumber).toBe('0A1B2C');
    expect(cert.checkPrivateKey(createPrivateKey(leaf.keyPem))).toBe(true);
    expect(() => tls.createSecureContext({ cert: leaf.certPem, key: leaf.keyPem })).not.toThrow();

    const info = describeCertificate(leaf.certPem);
    expect(info).toMatchObject({
      subject: 'CN=agent-a',
      commonName: 'agent-a',
      commonNames: ['agent-a'],
      issuer: 'CN=pullplane test CA',
      serialNumber: '0a1b2c',
      dnsNames: ['agent-a.example.com'],
      ipAddresses: [],
      uris: ['spiffe://cluster.local/ns/argocd/sa/agent-a'],
      fingerprint256: cert.fingerprint256,
      isCertificateAuthority: false,
    });
  });

  it('uses exactly one EKU per single usage', async () => {
    const client = await issueCertificate(ca, { commonName: 'c', usage: 'client' });
    expect(new X509Certificate(client.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(new X509Certificate(server.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new X509Certificate(server.certPem).subjectAltName).toBe(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
    );
  });

  it('keeps serial numbers positive and random by default', async () => {
    const high = await issueCertificate(ca, { commonName: 'c', usage: 'client', serialNumber: 'ff' });
    // Both readers print the magnitude; the DER carries a sign octet, or OpenSSL would refuse it.
    expect(new X509Certificate(high.certPem).serialNumber).toBe('FF');
    expect(describeCertificate(high.certPem).serialNumber).toBe('ff');
    const a = describeCertificate((await issueCertificate(ca, { commonName: 'c', usage: 'client' })).certPem);
    const b = describeCertificate((await issueCertificate(ca, { commonName: 'c', usage: 'client' })).certPem);
    expect(a.serialNumber).toMatch(/^[4-7][0-9a-f]{31}$/);
    expect(a.serialNumber).not.toBe(b.serialNumber);
  });

  it('can issue already-expired certificates', async () => {
    const expired = await issueCertificate(ca, {
      commonName: 'old',
      usage: 'client',
      notAfter: new Date(Date.now() - DAY),
      validityDays: 30,
    });
    const info = describeCertificate(expired.certPem);
    expect(info.notAfter.getTime()).toBeLessThan(Date.now());
    expect(info.notAfter.getTime() - info.notBefore.getTime()).toBe(30 * DAY);
  });

  it('accepts a SEC1 ("EC PRIVATE KEY") CA key', async () => {
    const sec1 = createPrivateKey(ca.keyPem).export({ type: 'sec1', format: 'pem' }).toString();
    expect(sec1).toMatch(/BEGIN EC PRIVATE KEY/);
    const leaf = await issueCertificate(
      { certPem: ca.certPem, keyPem: sec1 },
      { commonName: 'x', usage: 'client' },
    );
    expect(new X509Certificate(leaf.certPem).checkIssued(new X509Certificate(ca.certPem))).toBe(true);
  });

  it('rejects invalid requests and unusable authorities', async () => {
    const leaf = await issueCertificate(ca, { commonName: 'leaf', usage: 'both' });
    await expectPkiError(
      issueCertificate(leaf, { commonName: 'x', usage: 'client' }),
      'PKI_NOT_A_CERTIFICATE_AUTHORITY',
    );
    await expectPkiError(
      issueCertificate({ certPem: ca.certPem, keyPem: otherCa.keyPem }, { commonName: 'x', usage: 'client' }),
      'PKI_KEY_MISMATCH',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    await expectPkiError(
      issueCertificate({ certPem: ca.certPem, keyPem: rsa.toString() }, { commonName: 'x', usage: 'client' }),
      'PKI_UNSUPPORTED_KEY',
    );
    await expectPkiError(
      issueCertificate({ certPem: ca.certPem, keyPem: 'nope' }, { commonName: 'x', usage: 'client' }),
      'PKI_KEY_PARSE_FAILED',
    );
    await expectPkiError(
      issueCertificate({ certPem: 'garbage', keyPem: ca.keyPem }, { commonName: 'x', usage: 'client' }),
      'PKI_CERTIFICATE_PARSE_FAILED',
    );
    await expectPkiError(
      issueCertificate(ca, { commonName: 'x', usage: 'client', dnsNames: ['bad name'] }),
      'PKI_INVALID_INPUT',
    );
    await expectPkiError(
      issueCertificate(ca, { commonName: 'x', usage: 'client', ipAddresses: ['300.1.1.1'] }),
      'PKI_INVALID_INPUT',
    );
    await expectPkiError(
      issueCertificate(ca, { commonName: 'x', usage: 'client', uris: ['not a uri'] }),
      'PKI_INVALID_INPUT',
    );
    await expectPkiError(
      issueCertificate(ca, { commonName: 'x', usage: 'nobody' as 'client' }),
      'PKI_INVALID_INPUT',
    );
  });
});

describe('describeCertificate', () => {
  it('reads DER as well as PEM', () => {
    const der = new X509Certificate(server.certPem).raw;
    expect(describeCertificate(der)).toEqual(describeCertificate(server.certPem));
    expect(describeCertificate(der).ipAddresses).toEqual(['127.0.0.1', '::1']);
  });

  it('formats the subject as RFC 4514 with escaping', async () => {
    const odd = await issueCertificate(ca, { commonName: 'a,b+c"d', usage: 'client' });
    expect(describeCertificate(odd.certPem).subject).toBe('CN=a\\,b\\+c\\"d');
  });

  it('refuses bundles and garbage', async () => {
    await expectPkiError(
      () => describeCertificate(`${ca.certPem}\n${server.certPem}`),
      'PKI_CERTIFICATE_PARSE_FAILED',
    );
    await expectPkiError(() => describeCertificate(''), 'PKI_CERTIFICATE_PARSE_FAILED');
    await expectPkiError(
      () => describeCertificate(new Uint8Array([1, 2, 3])),
      'PKI_CERTIFICATE_PARSE_FAILED',
    );
    await expectPkiError(
      () => describeCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'),
      'PKI_CERTIFICATE_PARSE_FAILED',
    );
  });
});

describe('real TLS handshakes', () => {
  const serverSide = () => ({ ...server, caPem: ca.certPem });

  it('accepts a client certificate from the CA and exposes its CN', async () => {
    const client = await issueCertificate(ca, { commonName: 'agent-a', usage: 'client' });
    const outcome = await handshake({
      server: serverSide(),
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost', ...client },
    });
    expect(outcome).toEqual({ serverSawCn: 'agent-a', clientAuthorized: true });
  });

  it('rejects a client certificate from another CA', async () => {
    const client = await issueCertificate(otherCa, { commonName: 'agent-a', usage: 'client' });
    const outcome = await handshake({
      server: serverSide(),
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost', ...client },
    });
    expect(outcome.serverSawCn).toBeUndefined();
    expect(outcome.serverRejected).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });

  it('rejects a client without a certificate', async () => {
    const outcome = await handshake({
      server: serverSide(),
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost' },
    });
    expect(outcome.serverSawCn).toBeUndefined();
    expect(outcome.serverRejected).toBeDefined();
  });

  it('rejects an expired client certificate', async () => {
    const client = await issueCertificate(ca, {
      commonName: 'agent-a',
      usage: 'client',
      notBefore: new Date(Date.now() - 10 * DAY),
      notAfter: new Date(Date.now() - DAY),
    });
    const outcome = await handshake({
      server: serverSide(),
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost', ...client },
    });
    expect(outcome.serverSawCn).toBeUndefined();
    expect(outcome.serverRejected).toBe('CERT_HAS_EXPIRED');
  });

  it('rejects a server-only certificate presented by a client', async () => {
    const client = await issueCertificate(ca, { commonName: 'agent-a', usage: 'server' });
    const outcome = await handshake({
      server: serverSide(),
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost', ...client },
    });
    expect(outcome.serverSawCn).toBeUndefined();
    expect(outcome.serverRejected).toBe('INVALID_PURPOSE');
  });

  it('lets the client verify the server by DNS name localhost', async () => {
    const outcome = await handshake({
      server: { ...serverSide(), requestCert: false },
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost' },
    });
    expect(outcome).toEqual({ clientAuthorized: true });
  });

  it('lets the client verify the server by IP address 127.0.0.1', async () => {
    const outcome = await handshake({
      server: { ...serverSide(), requestCert: false },
      client: { caPem: ca.certPem, host: '127.0.0.1' },
    });
    expect(outcome).toEqual({ clientAuthorized: true });
  });

  it('fails server verification for a name not in the certificate', async () => {
    const outcome = await handshake({
      server: { ...serverSide(), requestCert: false },
      client: { caPem: ca.certPem, host: '127.0.0.1', servername: 'gateway.example.com' },
    });
    expect(outcome.clientError).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('fails server verification against the wrong CA, for an expired server cert, and for a client-only cert', async () => {
    const wrongCa = await handshake({
      server: { ...serverSide(), requestCert: false },
      client: { caPem: otherCa.certPem, host: 'localhost', servername: 'localhost' },
    });
    // The server sends its CA along, so OpenSSL reports the foreign root rather than the leaf.
    expect(wrongCa.clientError).toMatch(/^(SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)$/);

    const expiredServer = await issueCertificate(ca, {
      commonName: 'gw',
      dnsNames: ['localhost'],
      usage: 'server',
      notAfter: new Date(Date.now() - DAY),
    });
    const expired = await handshake({
      server: { ...expiredServer, caPem: ca.certPem, requestCert: false },
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost' },
    });
    expect(expired.clientError).toBe('CERT_HAS_EXPIRED');

    const clientOnly = await issueCertificate(ca, {
      commonName: 'gw',
      dnsNames: ['localhost'],
      usage: 'client',
    });
    const purpose = await handshake({
      server: { ...clientOnly, caPem: ca.certPem, requestCert: false },
      client: { caPem: ca.certPem, host: 'localhost', servername: 'localhost' },
    });
    expect(purpose.clientError).toBe('INVALID_PURPOSE');
  });
});
