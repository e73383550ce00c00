import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';

/** How one connection is secured: TLS with this context, or nothing (h2c, behind a mesh sidecar). */
export interface ConnectionSecurity {
  secureContext: SecureContext;
  /** False only where an operator asked to skip verifying the server (the agent's --insecure-tls). */
  rejectUnauthorized: boolean;
}

/**
 * How a client secures the connections it dials. Asked on every new connection, so material
 * rotated in between (a certificate renewed in place) applies to the next one and never cuts a
 * live one. `undefined`: plaintext.
 */
export interface TunnelCredentials {
  readonly secure: boolean;
  forConnection(): ConnectionSecurity | undefined;
}

export interface FileCredentialsInit {
  certFile: string;
  keyFile: string;
  /** Without one the system's roots verify the server. */
  caFile?: string | undefined;
  /** How often the files are read again (cert-manager rotates them in place). */
  refreshMs: number;
}

/** The ways a client may be given its credentials; each checks its material when made. */
export const tunnelCredentials = {
  insecure(): TunnelCredentials {
    return { secure: false, forConnection: () => undefined };
  },

  /** TLS with PEM material: a CA (else the system roots), and a client certificate for mTLS. */
  tls(ca?: Buffer | null, key?: Buffer | null, cert?: Buffer | null): TunnelCredentials {
    return tunnelCredentials.fromSecureContext(
      createSecureContext({ ...(ca ? { ca } : {}), ...(key && cert ? { key, cert } : {}) }),
    );
  },

  fromSecureContext(
    secureContext: SecureContext,
    opts: { rejectUnauthorized?: boolean } = {},
  ): TunnelCredentials {
    const security = { secureContext, rejectUnauthorized: opts.rejectUnauthorized ?? true };
    return { secure: true, forConnection: () => security };
  },

  /**
   * Certificate, key and CA read from files, read again at most every `refreshMs` (when a
   * connection is dialled). Read once here first, so a missing or broken file fails at startup;
   * a later read that fails keeps the last good material.
   */
  files(init: FileCredentialsInit): TunnelCredentials {
    const read = (): ConnectionSecurity => {
      const options: SecureContextOptions = {
        cert: readFileSync(init.certFile),
        key: readFileSync(init.keyFile),
        ...(init.caFile ? { ca: readFileSync(init.caFile) } : {}),
      };
      return { secureContext: createSecureContext(options), rejectUnauthorized: true };
    };
    let current = read();
    let readAt = Date.now();
    return {
      secure: true,
      forConnection() {
        if (Date.now() - readAt >= init.refreshMs) {
          readAt = Date.now();
          try {
            current = read();
          } catch {
            // Half-written during a rotation, or gone for a moment: the next dial reads again.
            readAt = 0;
          }
        }
        return current;
      },
    };
  },
};
