import { webcrypto } from 'node:crypto';
import { credentialUri } from './credential-kind.js';
import { PkiError, PkiErrorCode } from './errors.js';
import { generateKeyPair, importSigningKey, privateKeyToPem, SIGNING_ALGORITHM } from './keys.js';
import { parseCertificate } from './parse.js';
import { normaliseSerialNumber, randomSerialNumber } from './serial.js';
import { checkCommonName, checkDnsName, checkIpAddress, checkUri } from './subject.js';
import type {
  CertificateAndKey,
  CertificateAuthority,
  CertificateUsage,
  IssueCertificateOptions,
} from './types.js';
import { resolveValidity } from './validity.js';
import {
  type AuthorityKeyIdentifierExtension,
  type Extension,
  type JsonGeneralName,
  type X509Certificate,
  x509,
} from './x509.js';

const DEFAULT_LEAF_VALIDITY_DAYS = 365;

const EKU: Record<CertificateUsage, Array<'serverAuth' | 'clientAuth'>> = {
  server: ['serverAuth'],
  client: ['clientAuth'],
  both: ['serverAuth', 'clientAuth'],
};

/** Issues a leaf certificate with a fresh P-256 key, signed by `ca`. */
export async function issueCertificate(
  ca: CertificateAuthority,
  options: IssueCertificateOptions,
): Promise<CertificateAndKey> {
  checkCommonName(options.commonName);
  if (!Object.hasOwn(EKU, options.usage)) {
    throw new PkiError(
      PkiErrorCode.INVALID_INPUT,
      `usage must be server, client or both, got ${options.usage}`,
    );
  }
  const names = subjectAltNames(options);
  const { notBefore, notAfter } = resolveValidity(options, DEFAULT_LEAF_VALIDITY_DAYS);
  const serialNumber =
    options.serialNumber === undefined ? randomSerialNumber() : normaliseSerialNumber(options.serialNumber);
  const {
    BasicConstraintsExtension,
    ExtendedKeyUsage,
    ExtendedKeyUsageExtension,
    KeyUsageFlags,
    KeyUsagesExtension,
    SubjectAlternativeNameExtension,
    SubjectKeyIdentifierExtension,
    X509CertificateGenerator,
  } = x509();
  const authority = await loadAuthority(ca);
  const keys = await generateKeyPair();

  const extensions: Extension[] = [
    new BasicConstraintsExtension(false, undefined, true),
    // ECDSA keys sign (TLS 1.3 CertificateVerify, ECDHE); they never encipher keys.
    new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
    new ExtendedKeyUsageExtension(
      EKU[options.usage].map((u) => ExtendedKeyUsage[u]),
      false,
    ),
    await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
    await authorityKeyIdentifier(authority.cert),
  ];
  if (names.length > 0) extensions.push(new SubjectAlternativeNameExtension(names, false));

  const cert = await X509CertificateGenerator.create(
    {
      serialNumber,
      subject: [{ CN: [options.commonName] }],
      // Reuse the CA's encoded name so issuer/subject matching is byte-exact.
      issuer: authority.cert.subjectName,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: authority.key,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions,
    },
    webcrypto,
  );
  return { certPem: cert.toString('pem'), keyPem: privateKeyToPem(keys.privateKey) };
}

function subjectAltNames(options: IssueCertificateOptions): JsonGeneralName[] {
  const names: JsonGeneralName[] = [];
  for (const dns of options.dnsNames ?? []) {
    checkDnsName(dns);
    names.push({ type: 'dns', value: dns });
  }
  for (const ip of options.ipAddresses ?? []) {
    checkIpAddress(ip);
    names.push({ type: 'ip', value: ip });
  }
  const uris = [...(options.uris ?? [])];
  if (options.kind !== undefined) {
    if (options.usage !== 'client') {
      throw new PkiError(PkiErrorCode.INVALID_INPUT, `a ${options.kind} credential must have usage client`);
    }
    uris.push(credentialUri(options.kind, options.commonName));
  }
  for (const uri of uris) {
    checkUri(uri);
    // @peculiar/x509 calls the uniformResourceIdentifier GeneralName "url".
    names.push({ type: 'url', value: uri });
  }
  return names;
}

async function loadAuthority(
  ca: CertificateAuthority,
): Promise<{ cert: X509Certificate; key: webcrypto.CryptoKey }> {
  const cert = parseCertificate(ca.certPem);
  const constraints = cert.getExtension(x509().BasicConstraintsExtension);
  if (!constraints?.ca) {
    throw new PkiError(PkiErrorCode.NOT_A_CERTIFICATE_AUTHORITY, `certificate ${cert.subject} is not a CA`);
  }
  const { key, spki } = await importSigningKey(ca.keyPem);
  if (!Buffer.from(cert.publicKey.rawData).equals(spki)) {
    throw new PkiError(PkiErrorCode.KEY_MISMATCH, 'CA private key does not match the CA certificate');
  }
  return { cert, key };
}

async function authorityKeyIdentifier(caCert: X509Certificate): Promise<AuthorityKeyIdentifierExtension> {
  const { AuthorityKeyIdentifierExtension, SubjectKeyIdentifierExtension } = x509();
  const ski = caCert.getExtension(SubjectKeyIdentifierExtension);
  if (ski) return new AuthorityKeyIdentifierExtension(ski.keyId, false);
  return AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, webcrypto);
}
