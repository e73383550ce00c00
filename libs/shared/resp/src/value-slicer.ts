import { RespDecoder } from './decoder.js';
import type { RespDecoderLimitValues } from './decoder-options.js';
import type { RespError } from './errors.js';
import type { RespValue } from './types.js';

export interface ValueSlicerOptions extends RespDecoderLimitValues {
  /** See RespDecoderOptions: false leaves bulk strings that span chunks unjoined (decode `raw` for them). */
  joinSplitBulks?: boolean;
  /**
   * Each complete reply, in wire order, with the bytes it was read from: one slice of the
   * pushed chunk when it lay within one (no copy), else its pieces in order (and then, with
   * `joinSplitBulks` false, only the value's type and shape are exact).
   */
  onValue: (value: RespValue, raw: Buffer | Buffer[]) => void;
  /** The first malformed input or exceeded limit; later input is ignored. */
  onError: (error: RespError) => void;
}

/**
 * Cuts a stream of RESP replies at value boundaries and hands each one over as the bytes it
 * arrived in, so a proxy forwards them without re-encoding. The decoder reports where each
 * value ended in the current chunk; whatever of a chunk is left past the last end belongs to
 * the next value and is carried over.
 */
export class ValueSlicer {
  private readonly decoder: RespDecoder;
  private readonly onValue: ValueSlicerOptions['onValue'];
  private chunk: Buffer = Buffer.alloc(0);
  private start = 0;
  private carry: Buffer[] = [];
  private stopped = false;

  constructor(options: ValueSlicerOptions) {
    const { onValue, onError, ...limits } = options;
    this.onValue = onValue;
    this.decoder = new RespDecoder({
      ...limits,
      onValue: (v, end) => this.slice(v, end),
      onError: (err) => {
        this.stop();
        onError(err);
      },
    });
  }

  push(chunk: Buffer): void {
    if (this.stopped) return;
    this.chunk = chunk;
    this.start = 0;
    this.decoder.push(chunk);
    if (!this.stopped && this.start < chunk.length)
      this.carry.push(this.start === 0 ? chunk : chunk.subarray(this.start));
  }

  /** Drops the part of an unfinished value kept so far and ignores later input (the connection is gone). */
  stop(): void {
    this.stopped = true;
    this.carry = [];
  }

  private slice(v: RespValue, end: number): void {
    // Stopped by a callback: the rest of this chunk goes nowhere.
    if (this.stopped) return;
    const tail = this.chunk.subarray(this.start, end);
    const raw = this.carry.length === 0 ? tail : [...this.carry, tail];
    this.carry = [];
    this.start = end;
    this.onValue(v, raw);
  }
}

/** The bytes of a sliced value as one buffer (copies only when it came in pieces). */
export function joinRaw(raw: Buffer | Buffer[]): Buffer {
  return Buffer.isBuffer(raw) ? raw : Buffer.concat(raw);
}

/** The length of a sliced value. */
export function rawLength(raw: Buffer | Buffer[]): number {
  if (Buffer.isBuffer(raw)) return raw.length;
  let n = 0;
  for (const part of raw) n += part.length;
  return n;
}
