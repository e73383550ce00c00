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

/**
 * The internal listener's authenticator: proxy replicas prove who they are the same ways
 * agents do (mTLS or mesh identity), optionally restricted to an allow-list of identities.
 */
export function internalAuthenticator(method: AuthMethod, allowed: readonly string[]): Authenticator {
  const allow = new Set(allowed);
  return async (ctx) => {
    const r = outcome(await identify(method, ctx, {}));
    if (r.ok && allow.size > 0 && !allow.has(r.identity)) {
      return {
        ok: false,
        code: 'INTERNAL_CALLER_NOT_ALLOWED',
        reason: `caller ${r.identity} is not an allowed internal client`,
      };
    }
    return r;
  };
}
