import { createHash } from 'node:crypto';
import { parseCertificate } from './parse.js';
import { type JsonName, x509 } from './x509.js';

export interface CertificateDescription {
  /** RFC 4514 string, most specific RDN first (as Go's pkix.Name.String()): `CN=agent-a,O=acme`. */
  subject: string;
  /** The subject CN when there is exactly one; undefined when absent or ambiguous. */
  commonName: string | undefined;
  commonNames: string[];
  issuer: string;
  /** Lower-case hex without separators. */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  dnsNames: string[];
  ipAddresses: string[];
  uris: string[];
  /** SHA-256 of the DER, formatted like Node's `fingerprint256` (`AB:CD:...`). */
  fingerprint256: string;
  isCertificateAuthority: boolean;
}

/** Reads the fields identity decisions and log lines need, from PEM or DER. */
export function describeCertificate(input: string | Uint8Array): CertificateDescription {
  const cert = parseCertificate(input);
  const { BasicConstraintsExtension, SubjectAlternativeNameExtension } = x509();
  const subject = cert.subjectName.toJSON();
  const commonNames = subject.flatMap((rdn) => rdn.CN ?? []);
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  const uris: string[] = [];
  for (const name of cert.getExtension(SubjectAlternativeNameExtension)?.names.toJSON() ?? []) {
    if (name.type === 'dns') dnsNames.push(name.value);
    else if (name.type === 'ip') ipAddresses.push(name.value);
    else if (name.type === 'url') uris.push(name.value);
  }
  const digest = createHash('sha256').update(new Uint8Array(cert.rawData)).digest('hex').toUpperCase();
  return {
    subject: formatName(subject),
    commonName: commonNames.length === 1 ? commonNames[0] : undefined,
    commonNames,
    issuer: formatName(cert.issuerName.toJSON()),
    serialNumber: cert.serialNumber.toLowerCase(),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    dnsNames,
    ipAddresses,
    uris,
    fingerprint256: digest.match(/../g)?.join(':') ?? '',
    isCertificateAuthority: cert.getExtension(BasicConstraintsExtension)?.ca ?? false,
  };
}

function formatName(name: JsonName): string {
  return name
    .map((rdn) =>
      Object.entries(rdn)
        .flatMap(([type, values]) => values.map((value) => `${type}=${escapeValue(value)}`))
        .join('+'),
    )
    .reverse()
    .join(',');
}

// RFC 4514 section 2.4.
function escapeValue(value: string): string {
  return value
    .replace(/[\\,+"<>;]/g, (c) => `\\${c}`)
    .replace(/^[ #]/, (c) => `\\${c}`)
    .replace(/ $/, '\\ ');
}
