import type { TLSSocket } from 'node:tls';
import { type CredentialKindPolicy, identityFromPeerCertificate } from '@pullplane/auth';

/** What a connection's client certificate says about its caller. */
export type ConnectionPeer =
  /** No certificate (plaintext, or a TLS caller that sent none). */
  | { kind: 'none' }
  /** A certificate the TLS layer could not verify: refused whatever else comes with it. */
  | { kind: 'unverified'; detail: string }
  /** A verified caller certificate, naming `identity` (its CN). */
  | { kind: 'caller'; identity: string }
  /** A verified certificate that is not a caller's (an agent's, a proxy's, an unmarked one). */
  | { kind: 'not-caller'; detail: string };

const CN = { kind: 'mtls', match: 'common-name', spec: 'mtls' } as const;

/**
 * Reads a connection's client certificate on its first request and remembers the verdict for
 * the others: the certificate cannot change on a connection (listeners refuse renegotiation),
 * so parsing it again per request would only cost time. Only caller certificates name a
 * caller (`policy`: `expect: 'caller'`, and how to get one).
 */
export function connectionPeers(policy: CredentialKindPolicy): (socket: object) => ConnectionPeer {
  const known = new WeakMap<object, ConnectionPeer>();
  return (socket) => {
    const cached = known.get(socket);
    if (cached) return cached;
    const tls = socket as Partial<TLSSocket>;
    const peer = typeof tls.getPeerCertificate === 'function' ? tls.getPeerCertificate() : undefined;
    let verdict: ConnectionPeer;
    if (peer === undefined || peer === null || Object.keys(peer).length === 0) verdict = { kind: 'none' };
    else if (!tls.authorized)
      verdict = {
        kind: 'unverified',
        detail: `client certificate not accepted: ${String(tls.authorizationError)}`,
      };
    else {
      const id = identityFromPeerCertificate(CN, peer, policy);
      verdict = id.ok
        ? { kind: 'caller', identity: id.identity.agent }
        : { kind: 'not-caller', detail: id.reason };
    }
    known.set(socket, verdict);
    return verdict;
  };
}
