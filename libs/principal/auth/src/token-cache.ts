import type { DenyList } from './deny-list.js';
import type { VerifiedToken } from './token-authority.js';
import type { TokenVerifier } from './token-verifier.js';

export interface CachedTokenVerifierOptions {
  /** Checked again on every cache hit, so a revocation applies to the very next request. */
  denyList?: DenyList;
  /** Most tokens remembered; the least recently used is forgotten first. Default 4096. */
  maxEntries?: number;
  /** Injectable clock for tests. */
  now?: () => number;
}

interface Entry {
  token: VerifiedToken;
  /** Milliseconds since the epoch; Infinity for a token without `exp`. */
  until: number;
}

/**
 * Remembers tokens the inner verifier accepted, so a caller sending the same bearer token on
 * every request pays one signature check, not one per request. A remembered token is used
 * only until it expires (no clock tolerance: the inner verifier decides past that) and while
 * the deny list does not name it or its agent; `forgetToken`/`forgetAgent` drop entries when
 * revocations arrive and `clear` drops everything (a new verification key). Refusals are not
 * remembered: every bad token is checked in full.
 */
export class CachedTokenVerifier implements TokenVerifier {
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** Bumped by `clear`: a verification that started before it is not remembered. */
  private generation = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly inner: TokenVerifier,
    private readonly options: CachedTokenVerifierOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 4096;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  async verify(token: string, options?: { audience?: string }): Promise<VerifiedToken> {
    const key = options?.audience === undefined ? token : `${options.audience}\n${token}`;
    const entry = this.entries.get(key);
    if (entry) {
      if (entry.until > this.now() && !(await this.denied(entry.token))) {
        // Most recently used last, so the first key is the one to evict.
        this.entries.delete(key);
        this.entries.set(key, entry);
        this.hits++;
        return entry.token;
      }
      this.entries.delete(key);
    }
    this.misses++;
    const generation = this.generation;
    const verified = await this.inner.verify(token, options);
    if (generation === this.generation) {
      this.entries.set(key, {
        token: verified,
        until: verified.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY,
      });
      if (this.entries.size > this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
    }
    return verified;
  }

  /** A token was revoked (by `jti`). */
  forgetToken(jti: string): void {
    for (const [key, e] of this.entries) if (e.token.jti === jti) this.entries.delete(key);
  }

  /** An agent was revoked: its own tokens go. */
  forgetAgent(agent: string): void {
    for (const [key, e] of this.entries) if (e.token.agent === agent) this.entries.delete(key);
  }

  /** Forgets everything, including verifications still running (the key changed). */
  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  private async denied(t: VerifiedToken): Promise<boolean> {
    return this.options.denyList ? await this.options.denyList.isDenied(t.jti, t.agent) : false;
  }
}
