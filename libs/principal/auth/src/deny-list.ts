/**
 * Revocation for tokens. Self-registered agent tokens never expire, so revocation is the
 * only way to cut one off; the gateway feeds entries from the message bus.
 */
export type DenyEntry =
  /** One token, by `jti`. */
  | { kind: 'token'; jti: string; expiresAt?: Date }
  /** Every token of an agent. */
  | { kind: 'agent'; agent: string; expiresAt?: Date };
// `expiresAt` is when the entry may be forgotten: a token's own expiry, or the end of a ban.

export interface DenyList {
  isDenied(jti: string, agent: string): boolean | Promise<boolean>;
  deny(entry: DenyEntry): void | Promise<void>;
}

export interface InMemoryDenyListOptions {
  now?: () => Date;
}

/** A process-local DenyList; entries past `expiresAt` are dropped on lookup and by `prune()`. */
export class InMemoryDenyList implements DenyList {
  private readonly tokens = new Map<string, number>();
  private readonly agents = new Map<string, number>();
  private readonly now: () => Date;

  constructor(options: InMemoryDenyListOptions = {}) {
    this.now = options.now ?? (() => new Date());
  }

  deny(entry: DenyEntry): void {
    const until = entry.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
    const [map, key] = entry.kind === 'token' ? [this.tokens, entry.jti] : [this.agents, entry.agent];
    // Keep the longest ban when the same key is denied twice.
    map.set(key, Math.max(until, map.get(key) ?? Number.NEGATIVE_INFINITY));
  }

  /** Lifts a ban, e.g. when an operator re-admits an agent. */
  remove(entry: { kind: 'token'; jti: string } | { kind: 'agent'; agent: string }): void {
    if (entry.kind === 'token') this.tokens.delete(entry.jti);
    else this.agents.delete(entry.agent);
  }

  isDenied(jti: string, agent: string): boolean {
    return this.active(this.tokens, jti) || this.active(this.agents, agent);
  }

  /** Drops expired entries; returns how many were removed. */
  prune(): number {
    const now = this.now().getTime();
    let removed = 0;
    for (const map of [this.tokens, this.agents]) {
      for (const [key, until] of map) {
        if (until <= now) {
          map.delete(key);
          removed++;
        }
      }
    }
    return removed;
  }

  get size(): number {
    return this.tokens.size + this.agents.size;
  }

  /** The clock is read only for a key that is on the list (every request asks; few are). */
  private active(map: Map<string, number>, key: string): boolean {
    const until = map.get(key);
    if (until === undefined) return false;
    if (until > this.now().getTime()) return true;
    map.delete(key);
    return false;
  }
}
