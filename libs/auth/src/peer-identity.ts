import type { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import { type CertificateDescription, describeCertificate, PkiError } from '@pullplane/pki';
import type { MtlsAuthMethod } from './auth-method.js';
import { IdentityErrorCode } from './errors.js';
import { checkedIdentity, type IdentityResult, identityFromMatch, quote, reject } from './identity.js';

/** `tls.TLSSocket#getPeerCertificate()` (an empty object when the client sent none) or a crypto X509Certificate. */
export type PeerCertificateInput =
  | PeerCertificate
  | X509Certificate
  | Record<string, never>
  | null
  | undefined;

/**
 * Extracts the agent name from a client certificate the TLS layer has already verified
 * against the agent CA. Reads the DER itself rather than Node's pre-formatted subject and
 * SAN strings, whose escaping differs between Node versions.
 */
export function identityFromPeerCertificate(
  method: MtlsAuthMethod,
  peer: PeerCertificateInput,
): IdentityResult {
  const raw = peer && 'raw' in peer ? peer.raw : undefined;
  if (!raw || raw.length === 0) {
    return reject(IdentityErrorCode.PeerCertificateMissing, 'the client presented no certificate');
  }
  let cert: CertificateDescription;
  try {
    cert = describeCertificate(raw);
  } catch (err) {
    if (err instanceof PkiError) {
      return reject(
        IdentityErrorCode.PeerCertificateInvalid,
        `client certificate is unreadable: ${err.message}`,
      );
    }
    throw err;
  }

  switch (method.match) {
    case 'common-name': {
      if (cert.commonNames.length !== 1) {
        return reject(
          IdentityErrorCode.PeerCertificateInvalid,
          `client certificate ${quote(cert.subject)} has ${cert.commonNames.length} subject CNs, expected exactly one`,
        );
      }
      return checkedIdentity(cert.commonNames[0] as string, 'mtls', cert.subject, 'client certificate CN');
    }
    case 'subject': {
      const match = method.pattern.exec(cert.subject);
      if (!match) {
        return reject(
          IdentityErrorCode.NoMatch,
          `client certificate subject ${quote(cert.subject)} does not match ${quote(method.pattern.source)}`,
        );
      }
      return identityFromMatch(match, 'mtls', cert.subject, 'client certificate subject');
    }
    case 'uri': {
      for (const uri of cert.uris) {
        const match = method.pattern.exec(uri);
        if (match) return identityFromMatch(match, 'mtls', uri, `client certificate URI ${quote(uri)}`);
      }
      return reject(
        IdentityErrorCode.NoMatch,
        cert.uris.length === 0
          ? 'client certificate has no URI SAN'
          : `no URI SAN of the client certificate matches ${quote(method.pattern.source)}`,
      );
    }
  }
}
