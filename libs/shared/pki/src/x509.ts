// The shim must evaluate before @peculiar/x509 (tsyringe checks for it at load time), so
// every module in this package reaches the library through this file only.
import './reflect-metadata-shim.js';
import { createRequire } from 'node:module';

export type {
  AuthorityKeyIdentifierExtension,
  Extension,
  JsonGeneralName,
  JsonName,
  X509Certificate,
} from '@peculiar/x509';

type X509Module = typeof import('@peculiar/x509');
let loaded: X509Module | undefined;

/**
 * @peculiar/x509, loaded on first use. With its ASN.1 stack and tsyringe it is ~8 MiB of a
 * process's RSS, and most processes that import this package never parse or issue a
 * certificate (a gateway or proxy without mTLS clients, an agent using a token).
 */
export function x509(): X509Module {
  loaded ??= createRequire(import.meta.url)('@peculiar/x509') as X509Module;
  return loaded;
}
