import { constants as cryptoConstants } from 'node:crypto';
import type { SecureContextOptions, SecureVersion } from 'node:tls';

/** What a principal-side listener serves callers with: its pair, the callers' CA, versions and suites. */
export interface ListenerTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** CA of caller certificates; without one no client certificate is trusted. */
  ca?: string | Buffer;
  /** TLS versions and cipher suites (default: TLS 1.2 and up, Node's suites). */
  protocol?: { minVersion: SecureVersion; maxVersion?: SecureVersion; ciphers?: string };
}

/**
 * The secure context of a caller-facing listener. Without a CA no client certificate is
 * trusted (never Node's public roots). Renegotiation (TLS 1.2) is refused: listeners work out
 * the caller once per connection, which holds only while the handshake's certificate does.
 */
export function listenerSecureContext(t: ListenerTls): SecureContextOptions {
  const p = t.protocol;
  return {
    cert: t.cert,
    key: t.key,
    ca: t.ca ?? [],
    secureOptions: cryptoConstants.SSL_OP_NO_RENEGOTIATION,
    minVersion: p?.minVersion ?? 'TLSv1.2',
    ...(p?.maxVersion ? { maxVersion: p.maxVersion } : {}),
    ...(p?.ciphers ? { ciphers: p.ciphers } : {}),
  };
}
