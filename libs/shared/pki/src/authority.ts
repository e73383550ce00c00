import { webcrypto } from 'node:crypto';
import { generateKeyPair, privateKeyToPem, SIGNING_ALGORITHM } from './keys.js';
import { normaliseSerialNumber, randomSerialNumber } from './serial.js';
import { checkCommonName } from './subject.js';
import type { CertificateAuthority, CreateCertificateAuthorityOptions } from './types.js';
import { resolveValidity } from './validity.js';
import { x509 } from './x509.js';

const DEFAULT_CA_VALIDITY_DAYS = 3650;

/**
 * Creates a self-signed root CA. Path length is 0: this CA signs leaf certificates only,
 * so a leaked leaf key can never be used to mint further certificates.
 */
export async function createCertificateAuthority(
  options: CreateCertificateAuthorityOptions,
): Promise<CertificateAuthority> {
  checkCommonName(options.commonName);
  const {
    BasicConstraintsExtension,
    KeyUsageFlags,
    KeyUsagesExtension,
    SubjectKeyIdentifierExtension,
    X509CertificateGenerator,
  } = x509();
  const { notBefore, notAfter } = resolveValidity(options, DEFAULT_CA_VALIDITY_DAYS);
  const serialNumber =
    options.serialNumber === undefined ? randomSerialNumber() : normaliseSerialNumber(options.serialNumber);
  const keys = await generateKeyPair();
  const name = [{ CN: [options.commonName] }];
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber,
      name,
      notBefore,
      notAfter,
      keys,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(
          KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign | KeyUsageFlags.digitalSignature,
          true,
        ),
        await SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  return { certPem: cert.toString('pem'), keyPem: privateKeyToPem(keys.privateKey) };
}
