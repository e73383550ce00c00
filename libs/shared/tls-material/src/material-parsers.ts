import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { MaterialError, MaterialErrorCode } from './errors.js';

/** A server or client certificate (chain) with its private key, as PEM. */
export interface KeyPair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const invalid = (message: string, cause?: unknown) =>
  new MaterialError(MaterialErrorCode.INVALID, message, cause === undefined ? undefined : { cause });

/** Every PEM certificate in `pem`; refuses anything that holds none or an unreadable one. */
export function certificatesIn(pem: Buffer | string, where: string): string[] {
  const text = pem.toString('utf8');
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw invalid(`${where} holds no PEM certificate`);
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch (cause) {
      throw invalid(`${where} holds a certificate that cannot be read`, cause);
    }
  }
  return blocks;
}

/**
 * The earliest notAfter of the certificates in `pem` (a chain or CA bundle expires, as far as
 * its users are concerned, with its first certificate to expire).
 */
export function earliestNotAfter(pem: Buffer | string): Date {
  const times = certificatesIn(pem, 'certificate').map((b) => Date.parse(new X509Certificate(b).validTo));
  return new Date(Math.min(...times));
}

/** Checks that the key is a private key that belongs to the first certificate. */
export function keyPair(cert: Buffer, key: Buffer, where: string): KeyPair {
  const [leaf] = certificatesIn(cert, `${where} (certificate)`);
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (cause) {
    throw invalid(`${where} (key) is not an unencrypted PEM private key`, cause);
  }
  if (!new X509Certificate(leaf!).checkPrivateKey(privateKey)) {
    throw invalid(`${where}: the private key does not belong to the certificate`);
  }
  return { cert, key };
}

/** The certificates of several PEM sources as one bundle, duplicates removed. */
export function caBundle(parts: ReadonlyArray<{ pem: Buffer; where: string }>): Buffer {
  const seen = new Set<string>();
  for (const p of parts) for (const c of certificatesIn(p.pem, p.where)) seen.add(c.trim());
  return Buffer.from(`${[...seen].join('\n')}\n`);
}

/** A PEM private key (PKCS#8, SEC1 or PKCS#1, unencrypted) or, for verifiers, a public key. */
export function keyPem(pem: Buffer, where: string): string {
  try {
    createPrivateKey(pem);
  } catch (cause) {
    try {
      createPublicKey(pem);
    } catch {
      throw invalid(`${where} is not a PEM private or public key`, cause);
    }
  }
  return pem.toString('utf8');
}
