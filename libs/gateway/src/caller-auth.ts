import type { PeerCertificate } from 'node:tls';
import type { Metadata, ServerDuplexStream } from '@grpc/grpc-js';

/** What an authenticator may look at for one incoming call. */
export interface CallContext {
  metadata: Metadata;
  /** Present when the call arrived over TLS with a client certificate that verified. */
  peerCertificate?: PeerCertificate;
  remote: string;
}

export type AuthOutcome = { ok: true; identity: string } | { ok: false; code: string; reason: string };

export type Authenticator = (ctx: CallContext) => AuthOutcome | Promise<AuthOutcome>;

/** The peer certificate is looked up only if an authenticator asks for it. */
export function callContext(call: ServerDuplexStream<unknown, unknown>): CallContext {
  return {
    metadata: call.metadata,
    get peerCertificate() {
      return call.getAuthContext()?.sslPeerCertificate;
    },
    remote: call.getPeer(),
  };
}
