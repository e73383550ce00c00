export type BufferSide = 'request' | 'reply';

/**
 * The process-wide budget for bytes held on behalf of clients: commands being received
 * (counted whole as soon as their headers announce them) and replies waiting to be written.
 * A connection that would take the budget past its limit is refused rather than letting the
 * process grow until the kernel or V8 kills it with every other client's connection.
 */
export class BufferBudget {
  private readonly used = { request: 0, reply: 0 };

  constructor(readonly max: number) {}

  get request(): number {
    return this.used.request;
  }

  get reply(): number {
    return this.used.reply;
  }

  get total(): number {
    return this.used.request + this.used.reply;
  }

  /** Takes `bytes` if they fit; false (and nothing taken) if they do not. */
  take(bytes: number, side: BufferSide): boolean {
    if (bytes <= 0) return true;
    if (this.total + bytes > this.max) return false;
    this.used[side] += bytes;
    return true;
  }

  /** Takes `bytes` whether or not they fit: they are held already. */
  charge(bytes: number, side: BufferSide): void {
    this.used[side] += bytes;
  }

  give(bytes: number, side: BufferSide): void {
    if (bytes <= 0) return;
    this.used[side] -= bytes;
  }
}

/** One connection's share of the budget on one side, adjusted to what it holds now. */
export class BufferShare {
  held = 0;

  constructor(
    private readonly budget: BufferBudget,
    private readonly side: BufferSide,
  ) {}

  /** Moves the share to `bytes`; false when growing to it does not fit (the share is unchanged). */
  set(bytes: number): boolean {
    if (bytes > this.held) {
      if (!this.budget.take(bytes - this.held, this.side)) return false;
    } else {
      this.budget.give(this.held - bytes, this.side);
    }
    this.held = bytes;
    return true;
  }

  /** Moves the share to `bytes` even past the budget (for bytes already in the process). */
  force(bytes: number): void {
    if (bytes > this.held) this.budget.charge(bytes - this.held, this.side);
    else this.budget.give(this.held - bytes, this.side);
    this.held = bytes;
  }

  release(): void {
    this.budget.give(this.held, this.side);
    this.held = 0;
  }
}
