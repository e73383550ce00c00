import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  credentialUri,
  describeCertificate,
  issueCertificate,
  PkiError,
  readCredentialMarking,
} from '../src/index.js';

let ca: CertificateAuthority;
beforeAll(async () => {
  ca = await createCertificateAuthority({ commonName: 'kinds CA' });
});

describe('credential kinds', () => {
  it('marks a client certificate with spiffe://pullplane/<kind>/<CN>', async () => {
    for (const kind of ['agent', 'caller', 'proxy'] as const) {
      const cert = await issueCertificate(ca, { commonName: 'east', usage: 'client', kind });
      const d = describeCertificate(cert.certPem);
      expect(d.uris).toEqual([`spiffe://pullplane/${kind}/east`]);
      expect(readCredentialMarking(d.uris)).toEqual({ marked: true, kind, name: 'east' });
    }
  });

  it('keeps other URI SANs next to the marker', async () => {
    const cert = await issueCertificate(ca, {
      commonName: 'east',
      usage: 'client',
      kind: 'agent',
      uris: ['spiffe://cluster.local/ns/argocd/sa/east'],
    });
    expect(describeCertificate(cert.certPem).uris).toEqual([
      'spiffe://cluster.local/ns/argocd/sa/east',
      'spiffe://pullplane/agent/east',
    ]);
  });

  it('refuses a kind on a server certificate or a name that is not a DNS label', async () => {
    await expect(
      issueCertificate(ca, { commonName: 'east', usage: 'server', kind: 'agent' }),
    ).rejects.toBeInstanceOf(PkiError);
    await expect(
      issueCertificate(ca, { commonName: 'East_1', usage: 'client', kind: 'agent' }),
    ).rejects.toThrow(/DNS-label name/);
    expect(() => credentialUri('admin' as 'agent', 'x')).toThrow(PkiError);
  });

  it('reads no marker, one marker, or an invalid marking', () => {
    expect(readCredentialMarking([])).toEqual({ marked: false });
    expect(readCredentialMarking(['spiffe://cluster.local/ns/a/sa/b'])).toEqual({ marked: false });
    for (const uris of [
      ['spiffe://pullplane/agent/a', 'spiffe://pullplane/agent/b'],
      ['spiffe://pullplane/agent'],
      ['spiffe://pullplane/agent/'],
      ['spiffe://pullplane/agent/a/b'],
      ['spiffe://pullplane/root/a'],
      ['spiffe://pullplane/agent/A'],
      ['Spiffe://Pullplane/agent/a'],
    ]) {
      expect(readCredentialMarking(uris).marked, uris.join(' ')).toBe('invalid');
    }
  });
});
