import type { PeerCertificate } from 'node:tls';
import {
  type AuthMethod,
  type CredentialKind,
  type CredentialKindPolicy,
  extractHeaderIdentity,
  headersFromGrpcMetadata,
  type IdentityResult,
  identityFromBearerToken,
  identityFromPeerCertificate,
  type TokenVerifier,
} from '@pullplane/auth';
import type { Authenticator, AuthOutcome, CallContext } from './caller-auth.js';

export interface AuthenticatorDeps {
  /** Verifies agent tokens (audience `stream-gateway`); required for `--auth=token`. */
  tokens?: TokenVerifier;
  /**
   * Accept agent certificates that carry no credential kind (issued by other tooling, e.g.
   * argocd-agent's: CN = agent name). Off by default: such a certificate cannot be told
   * apart from a caller's certificate of the same CA.
   */
  allowUnmarkedCertificates?: boolean;
  /** How to fix a refused unmarked certificate, in the app's terms (flag names). */
  unmarkedHint?: string;
  /** Names no agent may take: the internal clients', so an agent cannot pass for a proxy. */
  reservedNames?: readonly string[];
}

function outcome(r: IdentityResult, kind: CredentialKind): AuthOutcome {
  if (!r.ok) return { ok: false, code: r.code, reason: r.reason };
  // Mesh identities and tokens carry no certificate marker: the pinned namespace or the
  // token audience is what makes them this listener's kind.
  return {
    ok: true,
    identity: r.identity.agent,
    credential: r.identity.kind ?? kind,
    ...(r.identity.via === 'token' ? { tokenId: r.identity.evidence } : {}),
  };
}

async function identify(
  method: AuthMethod,
  ctx: CallContext,
  deps: AuthenticatorDeps,
  kinds: CredentialKindPolicy,
): Promise<IdentityResult> {
  switch (method.kind) {
    case 'header':
      return extractHeaderIdentity(method, headersFromGrpcMetadata(ctx.metadata));
    case 'token':
      if (!deps.tokens) throw new Error('token authentication needs a token verification key');
      return identityFromBearerToken(deps.tokens, headersFromGrpcMetadata(ctx.metadata));
    default:
      return identityFromPeerCertificate(method, ctx.peerCertificate, kinds);
  }
}

/**
 * The agent listener's authenticator for a parsed `--auth` method. Only agent credentials
 * pass: a certificate must carry the agent kind for the name it authenticates (or no kind
 * at all, with `allowUnmarkedCertificates`); a token must be an agent token.
 */
export function agentAuthenticator(method: AuthMethod, deps: AuthenticatorDeps = {}): Authenticator {
  if (method.kind === 'token' && !deps.tokens) {
    throw new Error('--auth=token needs a token verification key');
  }
  const kinds: CredentialKindPolicy = {
    expect: 'agent',
    allowUnmarked: deps.allowUnmarkedCertificates ?? false,
    ...(deps.unmarkedHint ? { unmarkedHint: deps.unmarkedHint } : {}),
  };
  const reserved = new Set(deps.reservedNames ?? []);
  return async (ctx) => {
    const result = outcome(await identify(method, ctx, deps, kinds), 'agent');
    if (result.ok && reserved.has(result.identity)) {
      return {
        ok: false,
        code: 'AGENT_NAME_RESERVED',
        reason: `"${result.identity}" is the name of an internal client, not an agent`,
      };
    }
    return result;
  };
}

export interface InternalAuth {
  /** Per forward call: every call is authenticated and checked against the allow-list. */
  perCall: Authenticator;
  /** Per TLS connection, for mTLS: the certificate is parsed once, not on every call. */
  perConnection?: (peer: PeerCertificate) => AuthOutcome;
}

/**
 * The internal listener's authentication: proxy replicas prove who they are with a proxy
 * certificate or a mesh identity, checked against an allow-list (empty: any proxy
 * credential) on every call. With mTLS the certificate is checked once per connection and
 * each call must have arrived on such a connection; a call without one (plaintext) is
 * refused, never waved through.
 */
export function internalAuthenticator(method: AuthMethod, allowed: readonly string[]): InternalAuth {
  if (method.kind === 'token') throw new Error('the internal listener does not accept tokens');
  const allow = new Set(allowed);
  const check = (r: AuthOutcome): AuthOutcome =>
    r.ok && allow.size > 0 && !allow.has(r.identity)
      ? {
          ok: false,
          code: 'INTERNAL_CALLER_NOT_ALLOWED',
          reason: `caller ${r.identity} is not an allowed internal client`,
        }
      : r;
  const kinds: CredentialKindPolicy = { expect: 'proxy' };
  if (method.kind === 'mtls') {
    return {
      perCall: (ctx) => {
        const connection = ctx.connection;
        if (!connection) {
          return {
            ok: false,
            code: 'INTERNAL_NO_CLIENT_CERTIFICATE',
            reason: 'the call did not arrive on a TLS connection with a verified proxy certificate',
          };
        }
        return check(connection);
      },
      perConnection: (peer) => check(outcome(identityFromPeerCertificate(method, peer, kinds), 'proxy')),
    };
  }
  return { perCall: async (ctx) => check(outcome(await identify(method, ctx, {}, kinds), 'proxy')) };
}
