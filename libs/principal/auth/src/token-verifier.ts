import { decodeJwt } from 'jose';
import { TokenError, TokenErrorCode } from './errors.js';
import type { VerifiedToken } from './token-authority.js';

/** What checks a bearer token: a `TokenAuthority`, or one of the combinators below. */
export interface TokenVerifier {
  verify(token: string, options?: { audience?: string }): Promise<VerifiedToken>;
}

/**
 * A verifier whose key can be replaced while the service runs (a rotated Secret): each token
 * is checked against the key current when it arrives. Until a key is set, every token is
 * refused.
 */
export class ReloadableTokenVerifier implements TokenVerifier {
  constructor(private current: TokenVerifier | undefined = undefined) {}

  get ready(): boolean {
    return this.current !== undefined;
  }

  set(verifier: TokenVerifier | undefined): void {
    this.current = verifier;
  }

  verify(token: string, options?: { audience?: string }): Promise<VerifiedToken> {
    if (!this.current) {
      return Promise.reject(
        new TokenError(TokenErrorCode.INVALID_KEY, 'no token verification key is configured'),
      );
    }
    return this.current.verify(token, options);
  }
}

/**
 * Picks the verifier by the token's (not yet verified) `iss`: pullplane's tokens and
 * argocd-agent's are told apart before any signature check, and the chosen verifier checks
 * the issuer, audience and signature again. A token from an issuer not listed is refused.
 */
export function verifierByIssuer(byIssuer: ReadonlyMap<string, TokenVerifier>): TokenVerifier {
  return {
    verify(token, options) {
      let iss: unknown;
      try {
        iss = decodeJwt(token).iss;
      } catch {
        return Promise.reject(new TokenError(TokenErrorCode.MALFORMED, 'token is not a compact JWS'));
      }
      const verifier = typeof iss === 'string' ? byIssuer.get(iss) : undefined;
      if (!verifier) {
        return Promise.reject(
          new TokenError(
            TokenErrorCode.WRONG_ISSUER,
            'token was not issued by an issuer this service accepts',
          ),
        );
      }
      return verifier.verify(token, options);
    },
  };
}
