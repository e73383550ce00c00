import { extractBearerToken } from './bearer.js';
import { IdentityErrorCode, TokenError } from './errors.js';
import type { HeaderBag } from './headers.js';
import { checkedIdentity, type IdentityResult, reject } from './identity.js';
import type { TokenVerifier } from './token-verifier.js';

/** `aud` of tokens that open an agent's tunnel (issued by `pullplane agent create`). */
export const AGENT_TOKEN_AUDIENCE = 'stream-gateway';
/** `aud` of caller tokens: kubeconfigs and Argo CD cluster Secrets, for the resource proxy. */
export const CALLER_TOKEN_AUDIENCE = 'resource-proxy';

/**
 * `authorization: Bearer <jwt>` → agent identity, with the token refusal code passed
 * through. The authority decides the audience; a token scoped to agents (a caller's shape)
 * never names an agent itself.
 */
export async function identityFromBearerToken(
  authority: TokenVerifier,
  headers: HeaderBag,
): Promise<IdentityResult> {
  const bearer = extractBearerToken(headers);
  if (!bearer.ok) return bearer;
  try {
    const token = await authority.verify(bearer.token);
    if (token.agents !== undefined) {
      return reject(
        IdentityErrorCode.CREDENTIAL_WRONG_KIND,
        `token ${token.jti} is a caller token (it lists agents); only agent tokens open a tunnel`,
      );
    }
    const result = checkedIdentity(token.agent, 'token', token.jti, 'token subject');
    return result.ok ? { ok: true, identity: { ...result.identity, kind: 'agent' } } : result;
  } catch (err) {
    if (err instanceof TokenError) return reject(err.code, err.message);
    throw err;
  }
}
