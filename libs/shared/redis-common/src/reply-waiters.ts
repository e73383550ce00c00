/** Something waiting for a reply, stamped when its command was sent. */
export interface SentAt {
  sentAt: number;
}

/**
 * Commands waiting for their replies on one ordered connection, oldest first, with a single
 * timer for the oldest: a reply that takes longer than `timeoutMs` calls `onTimeout` (the owner
 * fails the connection and `drain`s the rest). No timer per command, no array shift per reply.
 */
export class ReplyWaiters<T extends SentAt> {
  private items: T[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly onTimeout: () => void,
  ) {}

  push(w: T): void {
    this.items.push(w);
    if (this.timer === undefined) this.arm(this.timeoutMs);
  }

  /** The oldest, left in place. */
  peek(): T | undefined {
    return this.items[this.head];
  }

  /** Takes the oldest (its reply came). */
  shift(): T | undefined {
    const w = this.items[this.head];
    if (w === undefined) return undefined;
    this.items[this.head++] = undefined as never;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
      clearTimeout(this.timer);
      this.timer = undefined;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return w;
  }

  /** Takes every one still waiting, oldest first, and stops the timer (the connection failed). */
  drain(): T[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const rest = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return rest;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const oldest = this.items[this.head];
      if (oldest === undefined) return;
      const waited = Date.now() - oldest.sentAt;
      if (waited >= this.timeoutMs) this.onTimeout();
      else this.arm(this.timeoutMs - waited);
    }, ms);
  }
}
