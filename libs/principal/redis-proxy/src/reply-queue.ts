/**
 * A place in the reply order, holding the replies of one or more commands. `pending` counts
 * replies still to come; `parts` holds the bytes of those that arrived, in order.
 */
export interface Slot {
  pending: number;
  parts: Buffer[];
  /** A run of consecutive principal commands: later ones may join while it is the tail. */
  readonly run: boolean;
}

/**
 * Keeps replies in request order when commands complete out of order (an agent answers after
 * the principal Redis answered later commands). Replies at the head are moved to the output
 * as soon as they exist, so a run of principal replies streams through without waiting for
 * the whole run; everything else waits for the slots before it.
 */
export class ReplyQueue {
  private slots: Slot[] = [];
  private head = 0;
  private out: Buffer[] = [];
  private outBytes = 0;
  /** Replies owed to the client and not yet produced. */
  outstanding = 0;
  /** Bytes of replies that arrived but wait behind an earlier one. */
  waitingBytes = 0;

  constructor(private readonly sink: (chunks: Buffer[], bytes: number) => void) {}

  /** True when nothing is owed and nothing waits to be written. */
  get idle(): boolean {
    return this.head === this.slots.length && this.out.length === 0;
  }

  /** A reply (or an out-of-band push) that is ready now: it goes after everything before it. */
  ready(bytes: Buffer): void {
    if (this.head === this.slots.length) {
      this.out.push(bytes);
      this.outBytes += bytes.length;
      return;
    }
    const tail = this.slots[this.slots.length - 1]!;
    if (tail.pending === 0) tail.parts.push(bytes);
    else this.slots.push({ pending: 0, parts: [bytes], run: false });
    this.waitingBytes += bytes.length;
  }

  /** Reserves the place of `count` replies that arrive later. */
  defer(count = 1, run = false): Slot {
    const slot: Slot = { pending: count, parts: [], run };
    this.slots.push(slot);
    this.outstanding += count;
    return slot;
  }

  /** The tail slot if it is a principal run that may still grow, else undefined. */
  tailRun(): Slot | undefined {
    if (this.head === this.slots.length) return undefined;
    const tail = this.slots[this.slots.length - 1]!;
    return tail.run ? tail : undefined;
  }

  /** One more reply joins a run slot. */
  extend(slot: Slot): void {
    slot.pending++;
    this.outstanding++;
  }

  /** One of the slot's replies arrived. */
  fill(slot: Slot, bytes: Buffer | Buffer[]): void {
    if (Array.isArray(bytes)) {
      for (const b of bytes) {
        slot.parts.push(b);
        this.waitingBytes += b.length;
      }
    } else {
      slot.parts.push(bytes);
      this.waitingBytes += bytes.length;
    }
    slot.pending--;
    this.outstanding--;
  }

  /** Moves every reply that may be written now to the output. */
  drain(): void {
    const slots = this.slots;
    while (this.head < slots.length) {
      const slot = slots[this.head]!;
      for (const part of slot.parts) {
        this.out.push(part);
        this.outBytes += part.length;
        this.waitingBytes -= part.length;
      }
      slot.parts.length = 0;
      if (slot.pending > 0) break;
      this.head++;
    }
    if (this.head === slots.length) {
      slots.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > slots.length) {
      this.slots = slots.slice(this.head);
      this.head = 0;
    }
  }

  /** Hands the output to the sink in one go. */
  flush(): void {
    if (this.out.length === 0) return;
    const out = this.out;
    const bytes = this.outBytes;
    this.out = [];
    this.outBytes = 0;
    this.sink(out, bytes);
  }
}
