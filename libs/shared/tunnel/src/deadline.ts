/**
 * One request's deadline, read off the clock once where the request is opened and handed on, so
 * every timer of the request ends at the same instant: the router stops looking for the agent,
 * the Open's `timeout_ms` carries what is left of it to the agent (whose endpoint resets the
 * stream if it has not answered by then), and the front's own timer answers its caller. No hop
 * restarts the count. (Clocks of the proxy and a workload cluster disagree, so what crosses the
 * tunnel is the time left, not the instant.)
 */
export class Deadline {
  /** No deadline: nothing expires. */
  static readonly NONE = new Deadline(Number.POSITIVE_INFINITY, 0);

  private constructor(
    /** When it passes, in ms since the epoch (Infinity for none). */
    readonly at: number,
    /** The time it was given, for messages ("no answer within 30000 ms"); 0 for none. */
    readonly timeoutMs: number,
  ) {}

  /** `timeoutMs` from `now`; none when `timeoutMs` is not positive. */
  static after(timeoutMs: number, now = Date.now()): Deadline {
    return timeoutMs > 0 ? new Deadline(now + timeoutMs, timeoutMs) : Deadline.NONE;
  }

  get isSet(): boolean {
    return this.at !== Number.POSITIVE_INFINITY;
  }

  /** Milliseconds left (0 once passed; Infinity for none). */
  remainingMs(now = Date.now()): number {
    return Math.max(0, this.at - now);
  }

  expired(now = Date.now()): boolean {
    return now >= this.at;
  }

  /** What an Open's `timeout_ms` carries: the time left, at least 1 ms while set (0 means none). */
  openTimeoutMs(now = Date.now()): number {
    return this.isSet ? Math.max(1, Math.ceil(this.at - now)) : 0;
  }

  /** Runs `fn` when the deadline passes (soon, if it has); returns how to cancel. Never, for none. */
  onExpiry(fn: () => void): () => void {
    if (!this.isSet) return () => undefined;
    const timer = setTimeout(fn, this.remainingMs());
    return () => clearTimeout(timer);
  }
}
