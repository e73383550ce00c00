import { PkiError, PkiErrorCode } from './errors.js';
import { type X509Certificate, x509 } from './x509.js';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Parses one certificate from PEM or DER. A PEM bundle with several certificates is
 * rejected rather than silently reduced to its first entry.
 */
export function parseCertificate(input: string | Uint8Array): X509Certificate {
  if (typeof input === 'string') {
    const blocks = input.match(PEM_BLOCK) ?? [];
    if (blocks.length !== 1) {
      throw new PkiError(
        PkiErrorCode.CERTIFICATE_PARSE,
        blocks.length === 0
          ? 'no PEM certificate found'
          : `expected one PEM certificate, found ${blocks.length}`,
      );
    }
    input = blocks[0] as string;
  }
  try {
    return new (x509().X509Certificate)(input);
  } catch (cause) {
    throw new PkiError(PkiErrorCode.CERTIFICATE_PARSE, 'certificate is not valid X.509', { cause });
  }
}
