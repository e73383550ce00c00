// The shim must evaluate before @peculiar/x509 (tsyringe checks for it at load time), so
// every module in this package reaches the library through this file only.
import './reflect-metadata-shim.js';

export type { Extension, JsonGeneralName, JsonName } from '@peculiar/x509';
export {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectAlternativeNameExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate,
  X509CertificateGenerator,
} from '@peculiar/x509';
