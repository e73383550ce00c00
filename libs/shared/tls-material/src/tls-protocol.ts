import type { SecureVersion } from 'node:tls';

/** argocd-agent's names for TLS versions (`--tls-min-version`, `--tls-max-version`). */
export const TLS_VERSION_NAMES = ['tls1.1', 'tls1.2', 'tls1.3'] as const;
export type TlsVersionName = (typeof TLS_VERSION_NAMES)[number];

const NODE_VERSION: Record<TlsVersionName, SecureVersion> = {
  'tls1.1': 'TLSv1.1',
  'tls1.2': 'TLSv1.2',
  'tls1.3': 'TLSv1.3',
};

/**
 * Go's cipher suite names (IANA's, as argocd-agent's `--tls-ciphersuites` takes them) and
 * OpenSSL's names for the same suites. TLS 1.3 suites have the same name in both.
 */
const SECURE_SUITES: Readonly<Record<string, string>> = {
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
};
const TLS13_SUITES = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];

/** Go's "insecure" list: named so an operator learns why, not just "unknown". */
const INSECURE_SUITES = new Set([
  'TLS_RSA_WITH_RC4_128_SHA',
  'TLS_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA',
  'TLS_RSA_WITH_AES_256_CBC_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_RC4_128_SHA',
  'TLS_ECDHE_RSA_WITH_RC4_128_SHA',
  'TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256',
]);

/** What Node's TLS needs: `minVersion`, `maxVersion`, `ciphers`. */
export interface TlsProtocolSettings {
  readonly minVersion: SecureVersion;
  readonly maxVersion?: SecureVersion;
  /** OpenSSL cipher list; absent: Node's defaults. */
  readonly ciphers?: string;
}

export interface TlsProtocolInput {
  readonly tlsMinVersion: string;
  readonly tlsMaxVersion?: string | undefined;
  readonly tlsCiphersuites: readonly string[];
}

/**
 * Reads argocd-agent's TLS settings: versions `tls1.1`..`tls1.3`, cipher suites by their
 * IANA (Go) names. As in Go, TLS 1.3 suites stay enabled when only TLS 1.2 suites are listed
 * (Go does not let them be configured); insecure suites are refused with the reason.
 */
export function tlsProtocolSettings(
  input: TlsProtocolInput,
): { settings: TlsProtocolSettings; problems: [] } | { settings?: undefined; problems: string[] } {
  const problems: string[] = [];
  const version = (flag: string, v: string): SecureVersion | undefined => {
    const n = NODE_VERSION[v.trim().toLowerCase() as TlsVersionName];
    if (!n) problems.push(`--${flag}: "${v}" is not one of ${TLS_VERSION_NAMES.join(', ')}`);
    return n;
  };
  const minVersion = version('tls-min-version', input.tlsMinVersion);
  const maxVersion =
    input.tlsMaxVersion === undefined ? undefined : version('tls-max-version', input.tlsMaxVersion);
  if (minVersion && maxVersion && rank(minVersion) > rank(maxVersion))
    problems.push(
      `--tls-min-version ${input.tlsMinVersion} is above --tls-max-version ${input.tlsMaxVersion}`,
    );
  const suites: string[] = [];
  for (const name of input.tlsCiphersuites) {
    const upper = name.trim().toUpperCase();
    const openssl = SECURE_SUITES[upper];
    if (openssl) suites.push(openssl);
    else if (INSECURE_SUITES.has(upper))
      problems.push(
        `--tls-ciphersuites: ${name} is insecure (Go's InsecureCipherSuites); choose an ECDHE suite`,
      );
    else
      problems.push(
        `--tls-ciphersuites: ${name} is not a cipher suite (use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)`,
      );
  }
  if (problems.length > 0 || !minVersion) return { problems };
  let ciphers: string | undefined;
  if (suites.length > 0) {
    const tls13 = suites.filter((s) => s.startsWith('TLS_'));
    const allows13 = !maxVersion || maxVersion === 'TLSv1.3';
    const tls12 = suites.filter((s) => !s.startsWith('TLS_'));
    // Like Go, a list of TLS 1.2 suites leaves TLS 1.3's own suites on.
    ciphers = [...(allows13 && tls13.length === 0 ? TLS13_SUITES : tls13), ...tls12].join(':');
  }
  return {
    settings: { minVersion, ...(maxVersion ? { maxVersion } : {}), ...(ciphers ? { ciphers } : {}) },
    problems: [],
  };
}

function rank(v: SecureVersion): number {
  return ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'].indexOf(v);
}
