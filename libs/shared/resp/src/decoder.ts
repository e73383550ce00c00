import { type AggregateKind, type Frame, frameValue, toPairs } from './aggregate-frame.js';
import {
  BANG,
  COLON,
  CR,
  DOLLAR,
  DOT,
  describeByte,
  digitsEnd,
  EQUALS,
  GT,
  LF,
  MINUS,
  PERCENT,
  PIPE,
  PLUS,
  parseLength,
  QUESTION,
  REPLY_TYPE_BYTES,
  SEMICOLON,
  STAR,
  TILDE,
} from './bytes.js';
import {
  DEFAULT_MAX_ARRAY_LENGTH,
  DEFAULT_MAX_BULK_LENGTH,
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_INLINE_LENGTH,
  type RespDecoderLimitValues,
  type RespDecoderOptions,
} from './decoder-options.js';
import { limitError, protocolError, RespError } from './errors.js';
import { splitInlineArgs } from './inline.js';
import { parseScalarLine } from './scalar-line.js';
import type { RespPairs, RespValue } from './types.js';

// Where the decoder is inside the current value; a chunk can end in any of these.
const READ_TYPE = 0;
const READ_LINE = 1;
const READ_BULK = 2;
const READ_CRLF = 3;

/** Pseudo type byte for a server-mode line that does not start with '*'. */
const INLINE = -1;

// What a completed bulk payload becomes.
const TARGET_BULK = 0;
const TARGET_VERBATIM = 1;
const TARGET_BLOB_ERROR = 2;
const TARGET_STREAM_CHUNK = 3;

const EMPTY = Buffer.alloc(0);

/**
 * Incremental push-style RESP decoder. Feed it whatever the socket delivers; values split at
 * any byte boundary are resumed, many values per chunk are emitted in order.
 *
 * Copying is minimal: a bulk string that lies within one chunk is emitted as a slice of that
 * chunk (so callers must not reuse pushed buffers), and one spanning chunks is gathered as
 * slices and concatenated once, when complete. Memory therefore grows with the bytes actually
 * received, never with a length the peer merely announced.
 *
 * Limits are checked against what headers announce before anything they announce is read:
 * a count or length over a limit fails at once, and in server mode a command's arguments are
 * kept as plain buffers in one array sized by its already-checked count, so a peer cannot make
 * the decoder hold an object per argument beyond the limits.
 */
export class RespDecoder {
  private readonly server: boolean;
  private readonly joinSplitBulks: boolean;
  private maxBulkLength: number;
  private maxArrayLength: number;
  private maxInlineLength: number;
  private maxDepth: number;
  private maxCommandBytes: number;
  private readonly onValue: ((value: RespValue, end: number) => void) | undefined;
  private readonly onCommand: ((args: Buffer[], end: number) => void) | undefined;
  private readonly admit: ((bytes: number, args: number) => boolean) | undefined;
  private readonly onError: (error: RespError) => void;

  private state = READ_TYPE;
  private lineType = 0;
  private lineParts: Buffer[] = [];
  private lineLength = 0;
  /** The previous chunk ended with the CR of a line; the next byte must be LF. */
  private lineSawCR = false;

  private bulkNeed = 0;
  private bulkTarget = TARGET_BULK;
  private bulkParts: Buffer[] = [];
  private bulkLength = 0;
  private crlfSeen = 0;

  private stack: Frame[] = [];
  // Server mode: the command being read.
  private cmdArgs: Buffer[] | undefined;
  private cmdRemaining = 0;
  /** Bytes of the command so far, counting announced bulk strings whole. */
  private cmdBytes = 0;

  /** Chunks of a streamed string (`$?`) while one is being read. */
  private streamParts: Buffer[] | undefined;
  private streamLength = 0;
  /** Attributes decoded but not yet attached (the value they describe has not started). */
  private pendingAttributes: RespPairs | undefined;
  /** Attributes of the scalar currently being read. */
  private valueAttributes: RespPairs | undefined;

  private failure: RespError | undefined;
  private callbackFailed = false;
  private parsing = false;
  /**
   * The top-level value completed by the current parse step. Each step consumes one token
   * and completes at most one top-level value, so it is handed out after the step returns,
   * when the offset where it ended is known.
   */
  private completed: RespValue | undefined;
  /** Server mode: the command completed by the current parse step. */
  private completedArgs: Buffer[] | undefined;
  /** What the one-pass readers' last length line said, and where the last bulk's payload starts. */
  private wholeNumber = 0;
  private wholePayload = 0;

  constructor(options: RespDecoderOptions) {
    this.server = options.mode === 'server';
    this.joinSplitBulks = options.joinSplitBulks !== false;
    this.maxBulkLength = options.maxBulkLength ?? DEFAULT_MAX_BULK_LENGTH;
    this.maxArrayLength = options.maxArrayLength ?? DEFAULT_MAX_ARRAY_LENGTH;
    this.maxInlineLength = options.maxInlineLength ?? DEFAULT_MAX_INLINE_LENGTH;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.maxCommandBytes = options.maxCommandBytes ?? Number.POSITIVE_INFINITY;
    this.onValue = options.onValue;
    this.onCommand = this.server ? options.onCommand : undefined;
    this.admit = this.server ? options.admit : undefined;
    this.onError = options.onError;
    if (this.onValue === undefined && this.onCommand === undefined)
      throw new TypeError('RespDecoder needs onValue (or onCommand in server mode)');
  }

  /**
   * Changes limits from the next header on (a server tightens them until a client has
   * authenticated, and loosens them after). Limits not given stay as they are.
   */
  setLimits(limits: RespDecoderLimitValues): void {
    if (limits.maxBulkLength !== undefined) this.maxBulkLength = limits.maxBulkLength;
    if (limits.maxArrayLength !== undefined) this.maxArrayLength = limits.maxArrayLength;
    if (limits.maxInlineLength !== undefined) this.maxInlineLength = limits.maxInlineLength;
    if (limits.maxDepth !== undefined) this.maxDepth = limits.maxDepth;
    if (limits.maxCommandBytes !== undefined) this.maxCommandBytes = limits.maxCommandBytes;
  }

  /** Server mode: bytes of the command being read, as far as its headers announced (0 between commands). */
  get commandBytes(): number {
    return this.cmdBytes + (this.state === READ_LINE ? this.lineLength : 0);
  }

  /** The error that poisoned this decoder, if any. */
  get error(): RespError | undefined {
    return this.failure;
  }

  /** True while part of a value is buffered (useful to tell a clean EOF from a truncated one). */
  get pending(): boolean {
    return (
      this.state !== READ_TYPE ||
      this.stack.length > 0 ||
      this.cmdArgs !== undefined ||
      this.streamParts !== undefined ||
      this.pendingAttributes !== undefined
    );
  }

  /**
   * Decodes as much of `chunk` as possible. Malformed input is reported through onError,
   * never thrown; after that the decoder ignores input (the connection is unusable, as with
   * Redis, which answers the error and closes). Exceptions thrown by onValue propagate.
   */
  push(chunk: Buffer): void {
    if (this.failure !== undefined || this.callbackFailed) return;
    if (this.parsing) throw new Error('RespDecoder.push() must not be called from onValue');
    this.parsing = true;
    try {
      this.parse(chunk);
    } catch (err) {
      if (this.callbackFailed || !(err instanceof RespError)) {
        this.callbackFailed = true;
        throw err;
      }
      this.failure = err;
      this.clear();
      this.onError(err);
    } finally {
      this.parsing = false;
    }
  }

  /** Forgets any partial value and a previous failure. */
  reset(): void {
    this.failure = undefined;
    this.callbackFailed = false;
    this.clear();
  }

  private clear(): void {
    this.completed = undefined;
    this.completedArgs = undefined;
    this.cmdArgs = undefined;
    this.cmdRemaining = 0;
    this.cmdBytes = 0;
    this.state = READ_TYPE;
    this.lineParts = [];
    this.lineLength = 0;
    this.lineSawCR = false;
    this.bulkParts = [];
    this.bulkLength = 0;
    this.stack = [];
    this.streamParts = undefined;
    this.streamLength = 0;
    this.pendingAttributes = undefined;
    this.valueAttributes = undefined;
  }

  private parse(buf: Buffer): void {
    const end = buf.length;
    let pos = 0;
    while (pos < end) {
      switch (this.state) {
        case READ_TYPE: {
          // A value or command that lies whole in this chunk is read in one pass; anything else
          // (split, malformed, near a limit) goes through the states below from the same byte.
          const whole = this.server ? this.wholeCommand(buf, pos) : this.wholeScalar(buf, pos);
          pos = whole === -1 ? this.readType(buf, pos) : whole;
          break;
        }
        case READ_LINE:
          pos = this.readLine(buf, pos);
          break;
        case READ_BULK:
          pos = this.readBulk(buf, pos);
          break;
        default:
          pos = this.readCrlf(buf, pos);
      }
      if (this.completed !== undefined || this.completedArgs !== undefined) this.emit(pos);
    }
    // The chunk ended inside a command: whatever of it is kept from now on must be admitted.
    if (this.admit !== undefined && (this.cmdArgs !== undefined || this.state !== READ_TYPE)) {
      const announced = this.commandBytes;
      if (!this.admit(announced, this.cmdArgs === undefined ? 0 : this.cmdArgs.length + this.cmdRemaining))
        throw limitError('command refused', 'admit');
    }
  }

  // Type bytes are validated as soon as they arrive, so garbage is rejected without waiting
  // for a line terminator that may never come.
  private readType(buf: Buffer, pos: number): number {
    const t = buf[pos]!;
    if (this.streamParts !== undefined) {
      if (t !== SEMICOLON) throw protocolError(`expected ';', got '${describeByte(t)}'`);
    } else if (this.server) {
      if (this.cmdArgs === undefined) {
        if (t !== STAR) {
          // Like Redis: anything that does not start a multibulk is an inline command.
          this.lineType = INLINE;
          this.state = READ_LINE;
          return pos;
        }
      } else if (t !== DOLLAR) {
        throw protocolError(`expected '$', got '${describeByte(t)}'`);
      }
    } else {
      if (REPLY_TYPE_BYTES[t] !== 1) throw protocolError(`unexpected type byte '${describeByte(t)}'`);
      if (t === DOT && this.stack[this.stack.length - 1]?.remaining !== -1) {
        throw protocolError(`unexpected type byte '.'`);
      }
      this.takePendingAttributes();
    }
    this.lineType = t;
    this.state = READ_LINE;
    return pos + 1;
  }

  /**
   * Server mode, between commands: a multibulk command whole in `buf` from `pos`, read in one
   * pass (a client's command nearly always arrives in one read). Returns where it ended, or -1
   * to leave it to the state machine: incomplete, malformed, or over a limit. Errors and
   * splits are therefore the state machine's alone, the same however the input is chunked.
   */
  private wholeCommand(buf: Buffer, pos: number): number {
    if (this.cmdArgs !== undefined || buf[pos] !== STAR) return -1;
    let i = this.wholeNumberLine(buf, pos);
    const n = this.wholeNumber;
    if (i === -1 || !(n > 0 && n <= this.maxArrayLength)) return -1;
    let bytes = i - pos;
    const args: Buffer[] = [];
    for (let k = 0; k < n; k++) {
      if (buf[i] !== DOLLAR) return -1;
      const next = this.wholeBulk(buf, i);
      if (next === -1) return -1;
      bytes += next - i;
      if (bytes > this.maxCommandBytes) return -1;
      args.push(buf.subarray(this.wholePayload, next - 2));
      i = next;
    }
    this.completedArgs = args;
    return i;
  }

  /**
   * Client mode: a bulk string or a one-line reply (`+ - :`) whole in `buf` from `pos`, read
   * in one pass, at any depth; -1 leaves it to the state machine (as wholeCommand does).
   */
  private wholeScalar(buf: Buffer, pos: number): number {
    if (this.streamParts !== undefined) return -1;
    const t = buf[pos];
    if (t === DOLLAR) {
      const next = this.wholeBulk(buf, pos);
      if (next === -1) return -1;
      this.takePendingAttributes();
      this.finishScalar({ type: 'bulk', value: buf.subarray(this.wholePayload, next - 2) });
      return next;
    }
    if (t === PLUS || t === MINUS || t === COLON) {
      const cr = buf.indexOf(CR, pos + 1);
      if (cr === -1 || cr + 1 >= buf.length || buf[cr + 1] !== LF) return -1;
      if (cr - pos - 1 > (t === COLON ? this.maxInlineLength : this.maxBulkLength)) return -1;
      this.takePendingAttributes();
      this.finishScalar(parseScalarLine(t, buf, pos + 1, cr));
      return cr + 2;
    }
    return -1;
  }

  /**
   * The one-pass readers' length line at `pos` (its type byte there): where it ends, with the
   * number in `wholeNumber`; -1 when it is not whole, not a canonical non-negative number, or
   * longer than maxInlineLength.
   */
  private wholeNumberLine(buf: Buffer, pos: number): number {
    const stop = digitsEnd(buf, pos + 1);
    if (stop === -1 || stop + 1 >= buf.length || buf[stop] !== CR || buf[stop + 1] !== LF) return -1;
    if (stop - pos - 1 > this.maxInlineLength) return -1;
    const n = parseLength(buf, pos + 1, stop);
    if (Number.isNaN(n)) return -1;
    this.wholeNumber = n;
    return stop + 2;
  }

  /** A bulk string whole at `pos` and within maxBulkLength: where it ends, its payload from `wholePayload`; else -1. */
  private wholeBulk(buf: Buffer, pos: number): number {
    const start = this.wholeNumberLine(buf, pos);
    if (start === -1 || this.wholeNumber > this.maxBulkLength) return -1;
    const payloadEnd = start + this.wholeNumber;
    if (payloadEnd + 1 >= buf.length || buf[payloadEnd] !== CR || buf[payloadEnd + 1] !== LF) return -1;
    this.wholePayload = start;
    return payloadEnd + 2;
  }

  /** Attributes read before a value describe it (moved when its type byte is read). */
  private takePendingAttributes(): void {
    if (this.pendingAttributes !== undefined) {
      this.valueAttributes = this.pendingAttributes;
      this.pendingAttributes = undefined;
    }
  }

  private readLine(buf: Buffer, pos: number): number {
    const end = buf.length;
    const inline = this.lineType === INLINE;
    if (this.lineSawCR) {
      if (buf[pos] !== LF) throw protocolError('invalid line terminator');
      this.lineSawCR = false;
      const line = this.takeLine();
      this.handleLine(line, 0, line.length);
      return pos + 1;
    }
    // Inline commands end at LF (an optional CR before it is stripped), RESP lines at CRLF.
    const idx = buf.indexOf(inline ? LF : CR, pos);
    if (idx === -1 || (!inline && idx === end - 1)) {
      const stop = idx === -1 ? end : idx;
      if (stop > pos) {
        this.lineParts.push(buf.subarray(pos, stop));
        this.lineLength += stop - pos;
      }
      // Checked on every partial line so a peer cannot grow one line without bound.
      this.checkLineLength(this.lineLength);
      if (idx !== -1) this.lineSawCR = true;
      return end;
    }
    // Length before terminator: the same order a split line sees them in, so the error does
    // not depend on how the input was chunked.
    this.checkLineLength(this.lineLength + idx - pos);
    if (!inline && buf[idx + 1] !== LF) throw protocolError('invalid line terminator');
    const next = inline ? idx + 1 : idx + 2;
    if (this.lineParts.length === 0) {
      this.handleLine(buf, pos, idx);
    } else {
      this.lineParts.push(buf.subarray(pos, idx));
      this.lineLength += idx - pos;
      const line = this.takeLine();
      this.handleLine(line, 0, line.length);
    }
    return next;
  }

  private takeLine(): Buffer {
    const parts = this.lineParts;
    const line = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.lineLength);
    this.lineParts = [];
    this.lineLength = 0;
    return line;
  }

  private checkLineLength(length: number): void {
    const t = this.lineType;
    if (this.server) {
      // Room left in the command for this line (its type byte included). Whichever limit a
      // growing line crosses first is the one reported, so the error never depends on where
      // the input was split.
      const room = this.maxCommandBytes - this.cmdBytes - (t === INLINE ? 0 : 1);
      if (length <= this.maxInlineLength && length <= room) return;
      if (room < this.maxInlineLength) throw commandTooBig();
      if (t === INLINE) throw limitError('too big inline request', 'maxInlineLength');
      throw limitError(
        t === STAR ? 'too big mbulk count string' : 'too big bulk count string',
        'maxInlineLength',
      );
    }
    const limit = t === PLUS || t === MINUS ? this.maxBulkLength : this.maxInlineLength;
    if (length > limit)
      throw limitError('line too long', t === PLUS || t === MINUS ? 'maxBulkLength' : 'maxInlineLength');
  }

  private handleLine(buf: Buffer, start: number, end: number): void {
    this.state = READ_TYPE;
    const t = this.lineType;
    if (this.server) {
      if (t === INLINE) this.inlineCommand(buf, start, end);
      else if (t === STAR) this.commandHeader(buf, start, end);
      else this.argumentHeader(buf, start, end);
      return;
    }
    switch (t) {
      case DOLLAR:
        this.bulkHeader(buf, start, end, TARGET_BULK);
        return;
      case BANG:
        this.bulkHeader(buf, start, end, TARGET_BLOB_ERROR);
        return;
      case EQUALS:
        this.bulkHeader(buf, start, end, TARGET_VERBATIM);
        return;
      case SEMICOLON:
        this.bulkHeader(buf, start, end, TARGET_STREAM_CHUNK);
        return;
      case STAR:
        this.aggregateHeader(buf, start, end, 'array');
        return;
      case PERCENT:
        this.aggregateHeader(buf, start, end, 'map');
        return;
      case TILDE:
        this.aggregateHeader(buf, start, end, 'set');
        return;
      case GT:
        this.aggregateHeader(buf, start, end, 'push');
        return;
      case PIPE:
        this.aggregateHeader(buf, start, end, 'attribute');
        return;
      case DOT:
        this.endStreamedAggregate(start, end);
        return;
      default:
        this.finishScalar(parseScalarLine(t, buf, start, end));
    }
  }

  /** Server mode: one argument's `$<n>` header, checked against every limit before its payload is read. */
  private argumentHeader(buf: Buffer, start: number, end: number): void {
    const n = parseLength(buf, start, end);
    if (Number.isNaN(n) || n < 0) throw protocolError('invalid bulk length');
    if (n > this.maxBulkLength) throw limitError('invalid bulk length', 'maxBulkLength');
    const bytes = this.cmdBytes + 1 + (end - start) + 2 + n + 2;
    if (bytes > this.maxCommandBytes) throw commandTooBig();
    this.cmdBytes = bytes;
    this.bulkNeed = n;
    this.bulkTarget = TARGET_BULK;
    this.state = READ_BULK;
  }

  private bulkHeader(buf: Buffer, start: number, end: number, target: number): void {
    if (target === TARGET_BULK && end - start === 1 && buf[start] === QUESTION) {
      this.streamParts = [];
      this.streamLength = 0;
      return;
    }
    const n = parseLength(buf, start, end);
    if (Number.isNaN(n)) throw protocolError('invalid bulk length');
    if (n < 0) {
      if (n === -1 && target === TARGET_BULK) {
        this.finishScalar({ type: 'bulk', value: null });
        return;
      }
      throw protocolError('invalid bulk length');
    }
    if (target === TARGET_STREAM_CHUNK) {
      if (n === 0) {
        const parts = this.streamParts!;
        const value = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.streamLength);
        this.streamParts = undefined;
        this.streamLength = 0;
        this.finishScalar({ type: 'bulk', value });
        return;
      }
      if (this.streamLength + n > this.maxBulkLength)
        throw limitError('invalid bulk length', 'maxBulkLength');
    } else if (n > this.maxBulkLength) {
      throw limitError('invalid bulk length', 'maxBulkLength');
    }
    if (target === TARGET_VERBATIM && n < 4) throw protocolError('invalid verbatim string');
    this.bulkNeed = n;
    this.bulkTarget = target;
    this.state = READ_BULK;
  }

  private readBulk(buf: Buffer, pos: number): number {
    const need = this.bulkNeed;
    const avail = buf.length - pos;
    if (this.bulkParts.length === 0 && avail >= need + 2) {
      // Fast path: payload and CRLF are all in this chunk; emit a zero-copy slice.
      const stop = pos + need;
      if (buf[stop] !== CR || buf[stop + 1] !== LF)
        throw protocolError('bulk payload not terminated by CRLF');
      this.state = READ_TYPE;
      this.finishBulk(buf.subarray(pos, stop));
      return stop + 2;
    }
    if (avail >= need) {
      if (need > 0) {
        this.bulkParts.push(buf.subarray(pos, pos + need));
        this.bulkLength += need;
      }
      this.bulkNeed = 0;
      this.crlfSeen = 0;
      this.state = READ_CRLF;
      return pos + need;
    }
    this.bulkParts.push(pos === 0 ? buf : buf.subarray(pos));
    this.bulkLength += avail;
    this.bulkNeed = need - avail;
    return buf.length;
  }

  private readCrlf(buf: Buffer, pos: number): number {
    let p = pos;
    while (p < buf.length) {
      if (buf[p] !== (this.crlfSeen === 0 ? CR : LF))
        throw protocolError('bulk payload not terminated by CRLF');
      p++;
      this.crlfSeen++;
      if (this.crlfSeen === 2) {
        const parts = this.bulkParts;
        const payload =
          parts.length === 0
            ? EMPTY
            : parts.length === 1
              ? parts[0]!
              : !this.joinSplitBulks && this.bulkTarget === TARGET_BULK && this.cmdArgs === undefined
                ? EMPTY
                : Buffer.concat(parts, this.bulkLength);
        this.bulkParts = [];
        this.bulkLength = 0;
        this.state = READ_TYPE;
        this.finishBulk(payload);
        return p;
      }
    }
    return p;
  }

  private finishBulk(payload: Buffer): void {
    const args = this.cmdArgs;
    if (args !== undefined) {
      args.push(payload);
      if (--this.cmdRemaining === 0) {
        this.cmdArgs = undefined;
        this.cmdBytes = 0;
        this.completedArgs = args;
      }
      return;
    }
    switch (this.bulkTarget) {
      case TARGET_BULK:
        this.finishScalar({ type: 'bulk', value: payload });
        return;
      case TARGET_BLOB_ERROR:
        this.finishScalar({ type: 'blobError', value: payload });
        return;
      case TARGET_VERBATIM:
        if (payload[3] !== COLON) throw protocolError('invalid verbatim string');
        this.finishScalar({
          type: 'verbatim',
          format: payload.toString('latin1', 0, 3),
          value: payload.subarray(4),
        });
        return;
      default:
        this.streamParts!.push(payload);
        this.streamLength += payload.length;
    }
  }

  private aggregateHeader(buf: Buffer, start: number, end: number, kind: AggregateKind): void {
    let remaining: number;
    if (end - start === 1 && buf[start] === QUESTION) {
      remaining = -1;
    } else {
      const n = parseLength(buf, start, end);
      if (Number.isNaN(n)) throw protocolError('invalid multibulk length');
      if (n < 0) {
        if (n === -1 && kind === 'array') {
          this.finishScalar({ type: 'array', value: null });
          return;
        }
        throw protocolError('invalid multibulk length');
      }
      remaining = kind === 'map' || kind === 'attribute' ? n * 2 : n;
      if (remaining > this.maxArrayLength) throw limitError('invalid multibulk length', 'maxArrayLength');
    }
    const attributes = this.valueAttributes;
    this.valueAttributes = undefined;
    const frame: Frame = { kind, items: [], remaining, attributes };
    if (remaining === 0) {
      this.closeFrame(frame);
      return;
    }
    if (this.stack.length >= this.maxDepth) throw limitError('too many nested aggregates', 'maxDepth');
    this.stack.push(frame);
  }

  private endStreamedAggregate(start: number, end: number): void {
    if (end !== start) throw protocolError('invalid end of streamed aggregate');
    // Attributes right before '.' describe nothing; drop them.
    this.valueAttributes = undefined;
    const frame = this.stack.pop()!;
    if ((frame.kind === 'map' || frame.kind === 'attribute') && frame.items.length % 2 !== 0) {
      throw protocolError('streamed map ended after a key');
    }
    this.closeFrame(frame);
  }

  private commandHeader(buf: Buffer, start: number, end: number): void {
    const n = parseLength(buf, start, end);
    if (Number.isNaN(n)) throw protocolError('invalid multibulk length');
    // Redis silently skips `*0` and negative counts.
    if (n <= 0) return;
    if (n > this.maxArrayLength) throw limitError('invalid multibulk length', 'maxArrayLength');
    const bytes = 1 + (end - start) + 2;
    if (bytes > this.maxCommandBytes) throw commandTooBig();
    this.cmdBytes = bytes;
    this.cmdRemaining = n;
    // The count is within the limits now; arguments are plain buffers, nothing per argument else.
    this.cmdArgs = [];
  }

  private inlineCommand(buf: Buffer, start: number, end: number): void {
    const stop = end > start && buf[end - 1] === CR ? end - 1 : end;
    const args = splitInlineArgs(buf, start, stop);
    if (args === undefined) throw protocolError('unbalanced quotes in request');
    // An empty line is not a command; Redis ignores it.
    if (args.length === 0) return;
    if (args.length > this.maxArrayLength) throw limitError('invalid multibulk length', 'maxArrayLength');
    this.completedArgs = args;
  }

  private finishScalar(value: RespValue): void {
    if (this.valueAttributes !== undefined) {
      value.attributes = this.valueAttributes;
      this.valueAttributes = undefined;
    }
    this.finish(value);
  }

  /** Adds a complete value to its parent, closing every aggregate it completes. */
  private finish(value: RespValue): void {
    let v = value;
    for (;;) {
      const top = this.stack[this.stack.length - 1];
      if (top === undefined) {
        this.completed = v;
        return;
      }
      top.items.push(v);
      if (top.remaining < 0) {
        if (top.items.length > this.maxArrayLength)
          throw limitError('invalid multibulk length', 'maxArrayLength');
        return;
      }
      top.remaining--;
      if (top.remaining > 0) return;
      this.stack.pop();
      const built = this.build(top);
      if (built === undefined) return;
      v = built;
    }
  }

  private closeFrame(frame: Frame): void {
    const built = this.build(frame);
    if (built !== undefined) this.finish(built);
  }

  /** Turns a complete frame into its value; attributes become pending instead (undefined). */
  private build(frame: Frame): RespValue | undefined {
    if (frame.kind !== 'attribute') return frameValue(frame);
    // Consecutive attributes merge; they all describe the next value.
    const pairs = toPairs(frame.items);
    this.pendingAttributes = frame.attributes === undefined ? pairs : [...frame.attributes, ...pairs];
    return undefined;
  }

  private emit(end: number): void {
    try {
      const args = this.completedArgs;
      if (args !== undefined) {
        this.completedArgs = undefined;
        if (this.onCommand !== undefined) this.onCommand(args, end);
        else this.onValue!({ type: 'array', value: args.map((value) => ({ type: 'bulk', value })) }, end);
        return;
      }
      const value = this.completed!;
      this.completed = undefined;
      this.onValue!(value, end);
    } catch (err) {
      this.callbackFailed = true;
      throw err;
    }
  }
}

function commandTooBig(): RespError {
  return limitError('command too large', 'maxCommandBytes');
}
