import { extractBearerToken } from './bearer.js';
import { TokenError } from './errors.js';
import type { HeaderBag } from './headers.js';
import { checkedIdentity, type IdentityResult, reject } from './identity.js';
import type { TokenAuthority } from './token-authority.js';

/** `authorization: Bearer <jwt>` → identity, with the token refusal code passed through. */
export async function identityFromBearerToken(
  authority: TokenAuthority,
  headers: HeaderBag,
): Promise<IdentityResult> {
  const bearer = extractBearerToken(headers);
  if (!bearer.ok) return bearer;
  try {
    const token = await authority.verify(bearer.token);
    return checkedIdentity(token.agent, 'token', token.jti, 'token subject');
  } catch (err) {
    if (err instanceof TokenError) return reject(err.code, err.message);
    throw err;
  }
}
