/**
 * Relayed streams holding back credit until the relay budgets have room for it, across the whole
 * process: room one agent's share frees is that agent's, but room in the process's budget may be
 * anyone's, so every waiter is offered it, oldest first. Offers are made once a turn, after the
 * transports' write callbacks of that turn have given their bytes back.
 */
export class RelayCreditQueue {
  /** Each waiter passes on what credit it can and says whether it still holds some back. */
  private readonly waiters = new Set<() => boolean>();
  private scheduled = false;

  /** Counts `waiter` in until it says it holds nothing back. */
  wait(waiter: () => boolean): void {
    this.waiters.add(waiter);
  }

  forget(waiter: () => boolean): void {
    this.waiters.delete(waiter);
  }

  get waiting(): number {
    return this.waiters.size;
  }

  /** Room was freed: offer it to the waiters in this turn's end. */
  freed(): void {
    if (this.scheduled || this.waiters.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const waiter of [...this.waiters]) if (!waiter()) this.waiters.delete(waiter);
    });
  }
}
