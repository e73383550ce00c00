import type { PeerCertificate } from 'node:tls';
import {
  type AuthMethod,
  extractHeaderIdentity,
  headersFromGrpcMetadata,
  type IdentityResult,
  identityFromBearerToken,
  identityFromPeerCertificate,
  type TokenAuthority,
} from '@pullplane/auth';
import type { Authenticator, AuthOutcome, CallContext } from './caller-auth.js';

export interface AuthenticatorDeps {
  /** Verifies agent tokens; required for `--auth=token`. */
  tokens?: TokenAuthority;
}

function outcome(r: IdentityResult): AuthOutcome {
  return r.ok ? { ok: true, identity: r.identity.agent } : { ok: false, code: r.code, reason: r.reason };
}

async function identify(
  method: AuthMethod,
  ctx: CallContext,
  deps: AuthenticatorDeps,
): Promise<IdentityResult> {
  switch (method.kind) {
    case 'header':
      return extractHeaderIdentity(method, headersFromGrpcMetadata(ctx.metadata));
    case 'token':
      if (!deps.tokens) throw new Error('token authentication needs a token verification key');
      return identityFromBearerToken(deps.tokens, headersFromGrpcMetadata(ctx.metadata));
    default:
      return identityFromPeerCertificate(method, ctx.peerCertificate);
  }
}

/** The agent-facing authenticator for a parsed `--auth` method. */
export function agentAuthenticator(method: AuthMethod, deps: AuthenticatorDeps = {}): Authenticator {
  if (method.kind === 'token' && !deps.tokens) {
    throw new Error('--auth=token needs a token verification key');
  }
  return async (ctx) => outcome(await identify(method, ctx, deps));
}

export interface InternalAuth {
  /** Per forward call: the mesh identity header (cheap), or nothing for mTLS. */
  perCall: Authenticator;
  /** Per TLS connection, for mTLS: the certificate is parsed once, not on every call. */
  perConnection?: (peer: PeerCertificate) => AuthOutcome;
}

/**
 * The internal listener's authentication: proxy replicas prove who they are the same ways
 * agents do (mTLS or mesh identity), optionally restricted to an allow-list of identities.
 */
export function internalAuthenticator(method: AuthMethod, allowed: readonly string[]): InternalAuth {
  const allow = new Set(allowed);
  const check = (r: AuthOutcome): AuthOutcome =>
    r.ok && allow.size > 0 && !allow.has(r.identity)
      ? {
          ok: false,
          code: 'INTERNAL_CALLER_NOT_ALLOWED',
          reason: `caller ${r.identity} is not an allowed internal client`,
        }
      : r;
  if (method.kind === 'mtls') {
    return {
      perCall: () => ({ ok: true, identity: 'mtls-connection' }),
      perConnection: (peer) => check(outcome(identityFromPeerCertificate(method, peer))),
    };
  }
  return { perCall: async (ctx) => check(outcome(await identify(method, ctx, {}))) };
}
