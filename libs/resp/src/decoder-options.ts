import type { RespError } from './errors.js';
import type { RespValue } from './types.js';

export const DEFAULT_MAX_BULK_LENGTH = 512 * 1024 * 1024;
export const DEFAULT_MAX_ARRAY_LENGTH = 1024 * 1024;
export const DEFAULT_MAX_INLINE_LENGTH = 64 * 1024;
export const DEFAULT_MAX_DEPTH = 32;

export interface RespDecoderLimits {
  /**
   * 'client' (default) decodes replies: every RESP2/RESP3 type, streamed types, attributes.
   * 'server' decodes what a Redis server accepts: top-level arrays of bulk strings or inline
   * commands, with Redis' own error messages; every value emitted is an array of bulk strings.
   */
  mode?: 'client' | 'server';
  /** Largest bulk string / verbatim string / blob error payload, and largest simple-string line. */
  maxBulkLength?: number;
  /** Most elements in one aggregate; a map or attribute of n pairs counts 2n. */
  maxArrayLength?: number;
  /** Longest inline command, and longest header / number line (`$`, `*`, `:`, `,` …). */
  maxInlineLength?: number;
  /** Deepest aggregate nesting (attributes count as a level). */
  maxDepth?: number;
}

export interface RespDecoderOptions extends RespDecoderLimits {
  /**
   * Called synchronously, in wire order, for each complete top-level value. `end` is the
   * offset in the chunk being pushed just past the value's last byte, so a proxy can forward
   * the exact bytes it received (everything since the previous value's end) without
   * re-encoding them.
   */
  onValue: (value: RespValue, end: number) => void;
  /** Called once, on the first malformed input or exceeded limit; the decoder then ignores all input. */
  onError: (error: RespError) => void;
}
