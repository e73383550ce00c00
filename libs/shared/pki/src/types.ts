import type { CredentialKind } from './credential-kind.js';
import type { ValidityOptions } from './validity.js';

/** A certificate with its private key, both PEM: what `tls.createSecureContext` takes. */
export interface CertificateAndKey {
  certPem: string;
  /** PKCS#8 ("BEGIN PRIVATE KEY"). */
  keyPem: string;
}

/** A CA is a certificate and key too; the name documents intent at call sites. */
export type CertificateAuthority = CertificateAndKey;

export interface CreateCertificateAuthorityOptions extends ValidityOptions {
  commonName: string;
  /** Hex; random when omitted. */
  serialNumber?: string;
}

/** Which TLS side may present the certificate: sets extendedKeyUsage. */
export type CertificateUsage = 'server' | 'client' | 'both';

export interface IssueCertificateOptions extends ValidityOptions {
  commonName: string;
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  /** URI SANs, e.g. `spiffe://cluster.local/ns/argocd/sa/agent-a`. */
  uris?: readonly string[];
  usage: CertificateUsage;
  /**
   * Marks a client certificate as an agent's, a caller's or a proxy's with the URI SAN
   * `spiffe://pullplane/<kind>/<commonName>`; the listeners accept only their own kind.
   */
  kind?: CredentialKind;
  /** Hex; random when omitted. */
  serialNumber?: string;
}
