import { createPrivateKey, createPublicKey, KeyObject, webcrypto } from 'node:crypto';
import { PkiError, PkiErrorCode } from './errors.js';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

/** ECDSA over P-256 with SHA-256: small, fast, and accepted by every TLS stack we talk to. */
export const SIGNING_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export function generateKeyPair(): Promise<CryptoKeyPair> {
  // Extractable so the private key can be handed out as PEM.
  return webcrypto.subtle.generateKey(SIGNING_ALGORITHM, true, ['sign', 'verify']);
}

/** PKCS#8 PEM ("BEGIN PRIVATE KEY"), the form Node's `tls` and most tools accept. */
export function privateKeyToPem(key: CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/**
 * Loads a P-256 private key for signing. Accepts PKCS#8 and SEC1 ("EC PRIVATE KEY") PEM,
 * since CA keys may come from openssl or cert-manager rather than from this package.
 */
export async function importSigningKey(pem: string): Promise<{ key: CryptoKey; spki: Buffer }> {
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(pem);
  } catch (cause) {
    throw new PkiError(PkiErrorCode.KEY_PARSE, 'private key is not a readable PEM key', { cause });
  }
  if (keyObject.asymmetricKeyType !== 'ec' || keyObject.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    const kind = keyObject.asymmetricKeyDetails?.namedCurve ?? keyObject.asymmetricKeyType ?? 'unknown';
    throw new PkiError(PkiErrorCode.UNSUPPORTED_KEY, `private key must be ECDSA P-256, got ${kind}`);
  }
  const der = keyObject.export({ type: 'pkcs8', format: 'der' });
  const key = await webcrypto.subtle.importKey('pkcs8', der, SIGNING_ALGORITHM, false, ['sign']);
  const spki = createPublicKey(keyObject).export({ type: 'spki', format: 'der' });
  return { key, spki };
}
