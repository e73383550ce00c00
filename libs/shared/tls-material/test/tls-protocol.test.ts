import { connect, createServer, type TLSSocket } from 'node:tls';
import { createTestPki } from '@pullplane/testing';
import { describe, expect, it } from 'vitest';
import { tlsProtocolSettings } from '../src/index.js';

const settings = (min: string, max?: string, suites: string[] = []) =>
  tlsProtocolSettings({
    tlsMinVersion: min,
    ...(max ? { tlsMaxVersion: max } : {}),
    tlsCiphersuites: suites,
  });

describe("argocd-agent's TLS settings", () => {
  it('maps versions and IANA suite names to what Node takes', () => {
    expect(settings('tls1.3').settings).toEqual({ minVersion: 'TLSv1.3' });
    expect(settings('TLS1.2', 'tls1.2', ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']).settings).toEqual({
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.2',
      ciphers: 'ECDHE-RSA-AES128-GCM-SHA256',
    });
    // Only TLS 1.2 suites listed while TLS 1.3 is allowed: TLS 1.3 keeps its own suites, as in Go.
    expect(settings('tls1.2', undefined, ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384']).settings?.ciphers).toBe(
      'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:ECDHE-ECDSA-AES256-GCM-SHA384',
    );
  });

  it('refuses unknown versions, inverted ranges, unknown and insecure suites, all at once', () => {
    expect(settings('tls1.0', 'ssl3', ['TLS_RSA_WITH_AES_128_GCM_SHA256', 'NOPE']).problems).toEqual([
      '--tls-min-version: "tls1.0" is not one of tls1.1, tls1.2, tls1.3',
      '--tls-max-version: "ssl3" is not one of tls1.1, tls1.2, tls1.3',
      "--tls-ciphersuites: TLS_RSA_WITH_AES_128_GCM_SHA256 is insecure (Go's InsecureCipherSuites); choose an ECDHE suite",
      '--tls-ciphersuites: NOPE is not a cipher suite (use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)',
    ]);
    expect(settings('tls1.3', 'tls1.2').problems).toEqual([
      '--tls-min-version tls1.3 is above --tls-max-version tls1.2',
    ]);
  });

  it('makes a real listener refuse a client that offers only older versions', async () => {
    const pki = await createTestPki();
    const cert = await pki.serverCert();
    const s = settings('tls1.3').settings!;
    const server = createServer({ cert: cert.certPem, key: cert.keyPem, ...s }, (sock) => sock.end('hi'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const attempt = (maxVersion: 'TLSv1.2' | 'TLSv1.3') =>
      new Promise<string>((resolve) => {
        const c: TLSSocket = connect({
          port,
          host: '127.0.0.1',
          ca: pki.ca.certPem,
          servername: 'localhost',
          maxVersion,
        });
        c.on('secureConnect', () => resolve(String(c.getProtocol())));
        c.on('error', (e) => resolve(`error: ${(e as NodeJS.ErrnoException).code}`));
      });
    expect(await attempt('TLSv1.3')).toBe('TLSv1.3');
    expect(await attempt('TLSv1.2')).toMatch(/^error: /);
    server.close();
  });
});
