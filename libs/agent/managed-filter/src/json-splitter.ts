import { ManagedFilterError, ManagedFilterErrorCode } from './errors.js';

/**
 * What the splitter hands to its driver, in input order:
 * - raw: bytes to copy through untouched;
 * - arrayStart: a filtered top-level array just opened (its '[' was in the preceding raw);
 * - item: one complete element of that array (leading whitespace excluded);
 * - captured: the complete value of a captured top-level key (an object), to be rewritten.
 */
export type SplitToken =
  | { t: 'raw'; b: Buffer }
  | { t: 'arrayStart'; key: string }
  | { t: 'item'; key: string; b: Buffer }
  | { t: 'captured'; key: string; b: Buffer };

export interface SplitterOptions {
  /** Top-level keys whose array elements are split out as items (e.g. items, rows). */
  filterKeys: ReadonlySet<string>;
  /** Top-level keys whose object value is handed over whole (e.g. metadata). */
  captureKeys: ReadonlySet<string>;
  /** Upper bound on one item or captured value; the memory a split can hold. */
  maxItemBytes: number;
  maxNesting?: number;
}

const PASS = 0;
const ARRAY = 1;
const CAPTURE = 2;
// Longest key worth decoding: the keys we look for are short even when \u-escaped.
const MAX_KEY_BYTES = 1024;

function malformed(message: string): never {
  throw new ManagedFilterError(ManagedFilterErrorCode.MALFORMED_RESPONSE, message);
}

/**
 * An incremental scanner over one top-level JSON object. It only tracks what it must (string
 * and escape state, bracket nesting, top-level keys), so it runs at indexOf speed through
 * string bodies and never holds more than one array element or captured value at a time.
 * Everything outside the selected keys flows through as raw byte ranges of the input chunks.
 */
export class TopLevelSplitter {
  private readonly stack: number[] = [];
  private readonly maxNesting: number;
  private inString = false;
  private escapePending = false;
  private started = false;
  private finished = false;
  private expectKey = false;
  private awaitingValue = false;
  private currentKey: string | undefined;
  private keyParts: Buffer[] | undefined;
  private keyLen = 0;
  private mode = PASS;
  private modeKey = '';
  private elemActive = false;
  private afterComma = false;
  private parts: Buffer[] = [];
  private partsLen = 0;

  constructor(private readonly opts: SplitterOptions) {
    this.maxNesting = opts.maxNesting ?? 1000;
  }

  push(buf: Buffer): SplitToken[] {
    const out: SplitToken[] = [];
    const len = buf.length;
    const stack = this.stack;
    let i = 0;
    let passStart = this.mode === PASS ? 0 : -1;
    let segStart = (this.mode === ARRAY && this.elemActive) || this.mode === CAPTURE ? 0 : -1;
    let keyStart = this.keyParts ? 0 : -1;
    // Next '"' and '\' at or after i; -2 = not searched yet, -1 = none left in this chunk.
    let q = -2;
    let bs = -2;

    const take = (end: number): Buffer => {
      const tail = buf.subarray(segStart, end);
      const size = this.partsLen + tail.length;
      if (size > this.opts.maxItemBytes) {
        throw new ManagedFilterError(
          ManagedFilterErrorCode.ITEM_TOO_LARGE,
          `item exceeds ${this.opts.maxItemBytes} bytes`,
        );
      }
      const b = this.parts.length === 0 ? tail : Buffer.concat([...this.parts, tail], size);
      this.parts = [];
      this.partsLen = 0;
      segStart = -1;
      return b;
    };

    while (i < len) {
      if (this.inString) {
        if (this.escapePending) {
          this.escapePending = false;
          i++;
          continue;
        }
        if (q !== -1 && q < i) q = buf.indexOf(0x22, i);
        if (bs !== -1 && bs < i) bs = buf.indexOf(0x5c, i);
        if (bs !== -1 && (q === -1 || bs < q)) {
          // Skip the escaped byte; it may be a quote.
          if (bs + 1 >= len) {
            this.escapePending = true;
            i = len;
          } else {
            i = bs + 2;
          }
          continue;
        }
        if (q === -1) {
          i = len;
          continue;
        }
        this.inString = false;
        i = q + 1;
        if (keyStart >= 0) {
          this.currentKey = this.decodeKey(buf.subarray(keyStart, i));
          keyStart = -1;
        }
        continue;
      }
      const c = buf[i]!;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        i++;
        continue;
      }
      if (stack.length === 0) {
        if (this.finished) malformed('unexpected data after the top-level object');
        if (c !== 0x7b) malformed('response is not a JSON object');
        this.started = true;
        stack.push(c);
        this.expectKey = true;
        i++;
        continue;
      }
      if (this.awaitingValue) {
        this.awaitingValue = false;
        const key = this.currentKey;
        this.currentKey = undefined;
        if (key !== undefined && this.opts.filterKeys.has(key)) {
          if (c === 0x5b) {
            out.push({ t: 'raw', b: buf.subarray(passStart, i + 1) });
            out.push({ t: 'arrayStart', key });
            passStart = -1;
            stack.push(c);
            this.mode = ARRAY;
            this.modeKey = key;
            this.elemActive = false;
            i++;
            continue;
          }
          // Anything but an array or null here would be passed through unfiltered: refuse.
          if (c !== 0x6e) malformed(`"${key}" is not an array`);
        } else if (key !== undefined && c === 0x7b && this.opts.captureKeys.has(key)) {
          if (i > passStart) out.push({ t: 'raw', b: buf.subarray(passStart, i) });
          passStart = -1;
          this.mode = CAPTURE;
          this.modeKey = key;
          segStart = i;
        }
      }
      const depth = stack.length;
      if (this.mode === ARRAY && depth === 2 && !this.elemActive && c !== 0x2c && c !== 0x5d) {
        this.elemActive = true;
        this.afterComma = false;
        segStart = i;
      }
      switch (c) {
        case 0x22:
          this.inString = true;
          if (depth === 1 && this.expectKey) {
            this.expectKey = false;
            keyStart = i;
            this.keyParts = [];
            this.keyLen = 0;
          }
          break;
        case 0x7b:
        case 0x5b:
          if (depth >= this.maxNesting) malformed('JSON nesting too deep');
          stack.push(c);
          break;
        case 0x7d:
        case 0x5d: {
          const open = stack.pop();
          if (open !== (c === 0x7d ? 0x7b : 0x5b)) malformed('mismatched brackets');
          if (this.mode === ARRAY && depth === 2) {
            // The filtered array itself closed.
            if (this.elemActive) out.push({ t: 'item', key: this.modeKey, b: take(i) });
            else if (this.afterComma) malformed('trailing comma in array');
            this.afterComma = false;
            this.elemActive = false;
            this.mode = PASS;
            passStart = i;
          } else if (this.mode === CAPTURE && depth === 2) {
            out.push({ t: 'captured', key: this.modeKey, b: take(i + 1) });
            this.mode = PASS;
            passStart = i + 1;
          }
          if (stack.length === 0) this.finished = true;
          break;
        }
        case 0x2c:
          if (depth === 1) this.expectKey = true;
          else if (this.mode === ARRAY && depth === 2) {
            if (!this.elemActive) malformed('empty array element');
            out.push({ t: 'item', key: this.modeKey, b: take(i) });
            this.elemActive = false;
            this.afterComma = true;
          }
          break;
        case 0x3a:
          if (depth === 1) this.awaitingValue = true;
          break;
      }
      i++;
    }

    if (passStart >= 0 && passStart < len) out.push({ t: 'raw', b: buf.subarray(passStart) });
    if (segStart >= 0 && segStart < len) {
      this.partsLen += len - segStart;
      if (this.partsLen > this.opts.maxItemBytes) {
        throw new ManagedFilterError(
          ManagedFilterErrorCode.ITEM_TOO_LARGE,
          `item exceeds ${this.opts.maxItemBytes} bytes`,
        );
      }
      this.parts.push(buf.subarray(segStart));
    }
    if (keyStart >= 0 && this.keyParts) {
      // Oversized keys stop accumulating; they cannot be one we look for.
      if (this.keyLen <= MAX_KEY_BYTES) this.keyParts.push(buf.subarray(keyStart));
      this.keyLen += len - keyStart;
    }
    return out;
  }

  /** Throws unless exactly one complete top-level object was seen. */
  end(): void {
    if (!this.started) malformed('empty response body');
    if (!this.finished || this.inString) malformed('truncated JSON response');
  }

  private decodeKey(tail: Buffer): string | undefined {
    const parts = this.keyParts ?? [];
    const size = this.keyLen + tail.length;
    this.keyParts = undefined;
    this.keyLen = 0;
    if (size > MAX_KEY_BYTES) return undefined;
    try {
      const key: unknown = JSON.parse(Buffer.concat([...parts, tail]).toString('utf8'));
      return typeof key === 'string' ? key : undefined;
    } catch {
      malformed('invalid object key');
    }
  }
}
