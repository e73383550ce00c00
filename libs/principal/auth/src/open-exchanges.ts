/** What an open exchange was authorised by: the agent it reaches, and the caller token if one. */
export interface ExchangeGrant {
  agent: string;
  /** The `jti` of the bearer token that let it in; absent for certificates and mesh identities. */
  jti?: string | undefined;
}

/** Why an open exchange is being ended. */
export interface ExchangeRevocation {
  kind: 'token' | 'agent';
  reason: string;
}

type End = (why: ExchangeRevocation) => void;

/**
 * The exchanges a proxy has open (watches, `logs -f`, event streams, WebSockets), by the token
 * and the agent that authorised them, so that a revocation ends them at once: checking the
 * deny list on each new request stops only the requests still to come.
 */
export class OpenExchanges {
  private readonly byToken = new Map<string, Set<End>>();
  private readonly byAgent = new Map<string, Set<End>>();

  /** Registers an exchange; `end` cuts it. Returns the release to call when it is over. */
  add(grant: ExchangeGrant, end: End): () => void {
    // Each exchange ends once, whichever of its keys is revoked first.
    let ended = false;
    const once: End = (why) => {
      if (ended) return;
      ended = true;
      release();
      end(why);
    };
    const keys: Array<[Map<string, Set<End>>, string]> = [[this.byAgent, grant.agent]];
    if (grant.jti !== undefined) keys.push([this.byToken, grant.jti]);
    for (const [map, key] of keys) {
      const set = map.get(key) ?? new Set<End>();
      map.set(key, set);
      set.add(once);
    }
    const release = () => {
      for (const [map, key] of keys) {
        const set = map.get(key);
        set?.delete(once);
        if (set?.size === 0) map.delete(key);
      }
    };
    return release;
  }

  /** Ends every open exchange the token `jti` authorised; returns how many. */
  endToken(jti: string, reason: string): number {
    return this.endAll(this.byToken.get(jti), { kind: 'token', reason });
  }

  /** Ends every open exchange to `agent`; returns how many. */
  endAgent(agent: string, reason: string): number {
    return this.endAll(this.byAgent.get(agent), { kind: 'agent', reason });
  }

  /** Exchanges open now. */
  get size(): number {
    let n = 0;
    for (const set of this.byAgent.values()) n += set.size;
    return n;
  }

  private endAll(set: Set<End> | undefined, why: ExchangeRevocation): number {
    if (!set) return 0;
    const ends = [...set];
    for (const end of ends) end(why);
    return ends.length;
  }
}
