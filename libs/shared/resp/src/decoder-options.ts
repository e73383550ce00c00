import type { RespError } from './errors.js';
import type { RespValue } from './types.js';

export const DEFAULT_MAX_BULK_LENGTH = 512 * 1024 * 1024;
export const DEFAULT_MAX_ARRAY_LENGTH = 1024 * 1024;
export const DEFAULT_MAX_INLINE_LENGTH = 64 * 1024;
export const DEFAULT_MAX_DEPTH = 32;

/** The limits a decoder enforces; `setLimits` changes them between values (e.g. after AUTH). */
export interface RespDecoderLimitValues {
  /** Largest bulk string / verbatim string / blob error payload, and largest simple-string line. */
  maxBulkLength?: number;
  /** Most elements in one aggregate; a map or attribute of n pairs counts 2n. In server mode: arguments per command. */
  maxArrayLength?: number;
  /** Longest inline command, and longest header / number line (`$`, `*`, `:`, `,` …). */
  maxInlineLength?: number;
  /** Deepest aggregate nesting (attributes count as a level). */
  maxDepth?: number;
  /**
   * Server mode: largest command, in bytes as sent (headers, payloads and line ends). Checked
   * when each header arrives, against what it announces, so a command that would be too large
   * is refused before any of its payload is kept. Default: no limit beyond the others.
   */
  maxCommandBytes?: number;
}

export interface RespDecoderLimits extends RespDecoderLimitValues {
  /**
   * 'client' (default) decodes replies: every RESP2/RESP3 type, streamed types, attributes.
   * 'server' decodes what a Redis server accepts: top-level arrays of bulk strings or inline
   * commands, with Redis' own error messages; every value emitted is an array of bulk strings.
   */
  mode?: 'client' | 'server';
}

export interface RespDecoderOptions extends RespDecoderLimits {
  /**
   * Client mode: false leaves a bulk string that arrived over several pushed chunks unjoined,
   * its value an empty buffer (its type, and every other value, are exact). For a proxy that
   * passes replies on as the bytes they came in and reads only their types: joining a large
   * value would copy it for nothing. Default true.
   */
  joinSplitBulks?: boolean;
  /**
   * Called synchronously, in wire order, for each complete top-level value. `end` is the
   * offset in the chunk being pushed just past the value's last byte, so a proxy can forward
   * the exact bytes it received (everything since the previous value's end) without
   * re-encoding them. Required unless `onCommand` is given in server mode.
   */
  onValue?: (value: RespValue, end: number) => void;
  /**
   * Server mode, instead of onValue: each command as its arguments (the name first), without
   * building a value object per argument.
   */
  onCommand?: (args: Buffer[], end: number) => void;
  /**
   * Server mode: asked whenever a chunk ends inside a command, i.e. before the decoder keeps
   * any of it past the current push. `bytes` is what the command will occupy as far as its
   * headers announced (a bulk string counts whole as soon as its length is read), `args` the
   * number of arguments announced. Returning false fails the decoder with a LIMIT_EXCEEDED
   * error whose `limit` is 'admit'. A server uses it to hold per-connection and process-wide
   * buffer budgets; the amounts only grow until the command completes (or the decoder fails).
   */
  admit?: (bytes: number, args: number) => boolean;
  /** Called once, on the first malformed input or exceeded limit; the decoder then ignores all input. */
  onError: (error: RespError) => void;
}
