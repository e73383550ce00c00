/**
 * Memory a session (or a whole process, when shared) lets its streams hold beyond their base
 * credit windows. A stream moving bulk data with a reader that keeps up grows its window (and
 * with it the peer's chunk size) only by reserving here, so however many streams grow, and
 * however slow their readers then become, the bytes a session buffers stay below
 * `streams × initial window + limit`. `outstanding` counts those bytes as they are: received
 * from the peer and not yet credited back (queued, in a reader's buffer, or read but not yet
 * acknowledged).
 *
 * A budget may have a `parent` (one per process, shared by every session's own budget): growth
 * is then reserved in both, so each session stays within its limit and all of them together
 * within the parent's, and the parent counts every session's outstanding bytes.
 */
export class WindowBudget {
  private reservedBytes = 0;
  private peakReservedBytes = 0;
  private outstandingBytes = 0;
  private peakOutstandingBytes = 0;

  constructor(
    readonly limit: number,
    readonly parent?: WindowBudget,
  ) {
    if (!(limit >= 0)) throw new RangeError(`window budget must be a byte count, got ${limit}`);
  }

  /** Bytes of extra window granted to streams now. */
  get reserved(): number {
    return this.reservedBytes;
  }

  /** The highest `reserved` seen. */
  get peakReserved(): number {
    return this.peakReservedBytes;
  }

  /** Bytes that `tryReserve` would take now here and in every ancestor (0 when one is full). */
  get room(): number {
    const own = Math.max(0, this.limit - this.reservedBytes);
    return this.parent ? Math.min(own, this.parent.room) : own;
  }

  /** Bytes received from peers and not yet credited back, across the streams using this. */
  get outstanding(): number {
    return this.outstandingBytes;
  }

  /** The highest `outstanding` seen. */
  get peakOutstanding(): number {
    return this.peakOutstandingBytes;
  }

  tryReserve(bytes: number): boolean {
    if (this.reservedBytes + bytes > this.limit) return false;
    if (this.parent && !this.parent.tryReserve(bytes)) return false;
    this.add(bytes);
    return true;
  }

  /**
   * Reserves `bytes` here and in every ancestor whatever the limits: for what was granted
   * without asking (a relay's stream windows implied by an Open), so the count stays true.
   */
  reserve(bytes: number): void {
    this.parent?.reserve(bytes);
    this.add(bytes);
  }

  private add(bytes: number): void {
    this.reservedBytes += bytes;
    if (this.reservedBytes > this.peakReservedBytes) this.peakReservedBytes = this.reservedBytes;
  }

  release(bytes: number): void {
    this.reservedBytes -= bytes;
    this.parent?.release(bytes);
  }

  /**
   * The budget that taking `bytes` more would take past its limit: this one, or an ancestor;
   * undefined when all have room.
   */
  wouldExceed(bytes: number): WindowBudget | undefined {
    if (this.outstandingBytes + bytes > this.limit) return this;
    return this.parent?.wouldExceed(bytes);
  }

  /** Bytes arrived (+) or were credited back or dropped (−). */
  track(delta: number): void {
    this.outstandingBytes += delta;
    if (this.outstandingBytes > this.peakOutstandingBytes) this.peakOutstandingBytes = this.outstandingBytes;
    this.parent?.track(delta);
  }
}
