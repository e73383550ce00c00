import type { IncomingMessage } from 'node:http';
import {
  type CredentialKindPolicy,
  extractBearerToken,
  extractHeaderIdentity,
  type HeaderAuthMethod,
  TokenError,
  type TokenVerifier,
} from '@pullplane/auth';
import { connectionPeers } from '@pullplane/http-front';
import type { ExtensionProxyFailure } from './errors.js';

export interface CallerAuthOptions {
  /**
   * Who may call: the Argo CD server's name, as the CN (and caller URI SAN) of its client
   * certificate or as its mesh identity (e.g. its service account).
   */
  allowed: readonly string[];
  /** Mesh mode (plaintext on loopback behind a sidecar): the identity header and its rule. */
  meshIdentity?: HeaderAuthMethod;
  /**
   * Bearer tokens (audience extension-proxy) whose subject is on the allow-list: what Argo CD
   * can send without a mesh, as a configured `Authorization` header of the extension whose
   * value comes from argocd-secret. Give it the deny list: revoked tokens are refused.
   */
  tokens?: TokenVerifier;
}

export interface Caller {
  identity: string;
  via: 'mtls' | 'token' | 'mesh';
  /** The bearer token's `jti` (via token): its revocation ends what it opened. */
  jti?: string;
}

/** A caller certificate (`pullplane cert create --kind caller`); never an agent's or a proxy's. */
const CALLER_CERTIFICATES: CredentialKindPolicy = {
  expect: 'caller',
  unmarkedHint: 'issue the Argo CD server a caller certificate with `pullplane cert create --kind caller`',
};
/** Each connection's certificate, read on its first request. */
const connectionPeer = connectionPeers(CALLER_CERTIFICATES);

/**
 * The Argo CD server, or a refusal. One listener serves one kind of caller: with TLS, a
 * verified client certificate or a bearer token counts and identity headers mean nothing;
 * behind a mesh, the configured identity header does (the sidecar sets it; nobody else reaches
 * the port).
 */
export async function identifyCaller(
  req: IncomingMessage,
  opts: CallerAuthOptions,
): Promise<{ ok: true; caller: Caller } | { ok: false; failure: ExtensionProxyFailure }> {
  const peer = connectionPeer(req.socket);
  if (peer.kind === 'unverified' || peer.kind === 'not-caller')
    return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: peer.detail } };
  if (peer.kind === 'caller') return allowedOrNot(peer.identity, 'mtls', opts);
  if (req.headers.authorization !== undefined) {
    if (!opts.tokens)
      return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: 'bearer tokens are not enabled' } };
    const bearer = extractBearerToken(req.headers);
    if (!bearer.ok) return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: bearer.reason } };
    try {
      const t = await opts.tokens.verify(bearer.token);
      return allowedOrNot(t.agent, 'token', opts, t.jti);
    } catch (err) {
      return {
        ok: false,
        failure: {
          name: 'BAD_CREDENTIALS',
          detail: err instanceof TokenError ? err.message : 'token rejected',
        },
      };
    }
  }
  const mesh = opts.meshIdentity;
  if (mesh && req.headers[mesh.header] !== undefined) {
    const id = extractHeaderIdentity(mesh, req.headers);
    if (!id.ok) return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: id.reason } };
    return allowedOrNot(id.identity.agent, 'mesh', opts);
  }
  return { ok: false, failure: { name: 'NO_CREDENTIALS' } };
}

function allowedOrNot(
  identity: string,
  via: Caller['via'],
  opts: CallerAuthOptions,
  jti?: string,
): { ok: true; caller: Caller } | { ok: false; failure: ExtensionProxyFailure } {
  if (!opts.allowed.includes(identity))
    return { ok: false, failure: { name: 'NOT_ALLOWED', detail: `${identity} is not on the allow-list` } };
  return { ok: true, caller: { identity, via, ...(jti ? { jti } : {}) } };
}
