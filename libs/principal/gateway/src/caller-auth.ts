import type { PeerCertificate } from 'node:tls';
import type { Metadata } from '@grpc/grpc-js';
import type { CredentialKind } from '@pullplane/auth';

/** What an authenticator may look at for one incoming call. */
export interface CallContext {
  metadata: Metadata;
  /** Present when the call arrived over TLS with a client certificate that verified. */
  peerCertificate?: PeerCertificate | undefined;
  /**
   * Who the listener decided the TLS connection belongs to when it accepted it (the client
   * certificate cannot change on an established connection); absent on plaintext
   * connections and on listeners without a per-connection check.
   */
  connection?: AuthOutcome | undefined;
  remote: string;
}

export type AuthOutcome =
  | {
      ok: true;
      identity: string;
      /** What the credential says it is; `unmarked` for a legacy certificate accepted by opt-in. */
      credential?: CredentialKind | 'unmarked';
      /** The `jti` of the token that authenticated, if a token did: revoking it ends the tunnel. */
      tokenId?: string;
    }
  | { ok: false; code: string; reason: string };

export type Authenticator = (ctx: CallContext) => AuthOutcome | Promise<AuthOutcome>;

/** Looks up the identity a listener recorded for a connection, by the call's peer address. */
export type ConnectionLookup = (remote: string) => AuthOutcome | undefined;
