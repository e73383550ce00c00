export interface Replacement {
  agent: string;
  /** Remote address of the tunnel that was replaced. */
  from: string;
  /** Remote address of the tunnel that replaced it (or the gateway holding it elsewhere). */
  to: string;
}

export interface ReplacementWatchOptions {
  /** Replacements of one agent's live tunnel within this window count together. */
  windowMs: number;
  /** How many of them make a flapping tunnel (two holders taking turns). */
  threshold: number;
  onFlapping: (event: FlappingEvent) => void;
}

export interface FlappingEvent {
  agent: string;
  /** The tunnel replaced last, and the one that replaced it: the two holders. */
  replaced: string;
  replacedBy: string;
  /** Every remote address involved in the burst, in order. */
  remotes: string[];
  replacements: number;
}

/**
 * Notices when an agent's live tunnel keeps being replaced. An agent that reconnects
 * replaces its old tunnel once; two holders of the same credentials (a stolen certificate,
 * a copied Secret) take turns for as long as both run. That is a security event.
 */
export class ReplacementWatch {
  private readonly recent = new Map<string, Array<{ at: number; from: string; to: string }>>();

  constructor(private readonly opts: ReplacementWatchOptions) {}

  record(r: Replacement, now = Date.now()): void {
    const since = now - this.opts.windowMs;
    const list = (this.recent.get(r.agent) ?? []).filter((e) => e.at > since);
    list.push({ at: now, from: r.from, to: r.to });
    if (list.length >= this.opts.threshold) {
      this.recent.delete(r.agent);
      this.opts.onFlapping({
        agent: r.agent,
        replaced: r.from,
        replacedBy: r.to,
        remotes: [...new Set(list.flatMap((e) => [e.from, e.to]))],
        replacements: list.length,
      });
    } else {
      this.recent.set(r.agent, list);
    }
    if (this.recent.size > 1_000) this.prune(since);
  }

  private prune(since: number): void {
    for (const [agent, list] of this.recent) {
      if ((list[list.length - 1]?.at ?? 0) <= since) this.recent.delete(agent);
    }
  }
}
