import { XfccErrorCode, XfccParseError } from './errors.js';

/** One proxy hop of an Envoy `x-forwarded-client-cert` header. */
export interface XfccElement {
  /** SAN URIs of the proxy that received the connection: its own identity, never the client's. */
  by: string[];
  hash?: string;
  /** URL-encoded PEM. */
  cert?: string;
  /** URL-encoded PEM chain. */
  chain?: string;
  subject?: string;
  /** SAN URIs of the client certificate. */
  uri: string[];
  dns: string[];
  /** Pairs with keys Envoy does not define, in order, key spelling preserved. */
  extensions: Array<{ key: string; value: string }>;
  /** The element exactly as it appeared in the header. */
  raw: string;
}

export interface XfccParseOptions {
  /** Whole-header limit in UTF-8 bytes. Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Per-value limit in UTF-8 bytes, after unquoting. Default 8 KiB. */
  maxValueBytes?: number;
  /** Default 32: real chains have a handful of hops. */
  maxElements?: number;
}

export const XFCC_MAX_HEADER_BYTES = 16 * 1024;
export const XFCC_MAX_VALUE_BYTES = 8 * 1024;
export const XFCC_MAX_ELEMENTS = 32;

const SINGLE_KEYS = { hash: 'hash', cert: 'cert', chain: 'chain', subject: 'subject' } as const;
// RFC 9110 token characters.
const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
const CONTROL = /[\u0000-\u001f\u007f]/;
const WHITESPACE = /\s/;

/**
 * Parses `x-forwarded-client-cert` strictly. Envoy never emits whitespace outside quotes,
 * so any is refused: notably ", " between elements is what a transport produces when it
 * folds two separate XFCC headers into one, which must not pass as a single chain.
 *
 * Quoted values may contain `,`, `;` and `=`; `\"` stands for a quote, and any other
 * backslash pair is kept verbatim so RFC 2253 escapes in Subject survive.
 *
 * @throws XfccParseError with a stable code on anything malformed.
 */
export function parseXfcc(value: string, options: XfccParseOptions = {}): XfccElement[] {
  const maxHeader = options.maxHeaderBytes ?? XFCC_MAX_HEADER_BYTES;
  const maxValue = options.maxValueBytes ?? XFCC_MAX_VALUE_BYTES;
  const maxElements = options.maxElements ?? XFCC_MAX_ELEMENTS;
  if (value.length === 0) throw new XfccParseError(XfccErrorCode.EMPTY, 'header is empty', 0);
  // Measured before any scanning so an oversized value costs nothing further.
  if (value.length > maxHeader || Buffer.byteLength(value, 'utf8') > maxHeader) {
    throw new XfccParseError(XfccErrorCode.HEADER_TOO_LONG, `header exceeds ${maxHeader} bytes`, 0);
  }
  const control = CONTROL.exec(value);
  if (control) {
    const hex = control[0].charCodeAt(0).toString(16).padStart(2, '0');
    throw new XfccParseError(
      XfccErrorCode.CONTROL_CHARACTER,
      `control character 0x${hex} at offset ${control.index}`,
      control.index,
    );
  }
  return new Parser(value, maxValue, maxElements).parse();
}

class Parser {
  private i = 0;

  constructor(
    private readonly s: string,
    private readonly maxValue: number,
    private readonly maxElements: number,
  ) {}

  parse(): XfccElement[] {
    const elements: XfccElement[] = [];
    for (;;) {
      if (elements.length === this.maxElements) {
        throw this.fail(XfccErrorCode.TOO_MANY_ELEMENTS, `more than ${this.maxElements} elements`);
      }
      elements.push(this.element());
      if (this.i === this.s.length) return elements;
      this.i++; // the ',' that ended the element
    }
  }

  private element(): XfccElement {
    const start = this.i;
    const element: XfccElement = { by: [], uri: [], dns: [], extensions: [], raw: '' };
    for (;;) {
      const [key, value] = this.pair(this.i === start);
      this.assign(element, key, value);
      const c = this.s[this.i];
      if (c === ';') {
        this.i++;
        continue;
      }
      // End of input or ',' (pair() only stops at those three).
      element.raw = this.s.slice(start, this.i);
      return element;
    }
  }

  private pair(elementStart: boolean): [string, string] {
    const keyStart = this.i;
    while (this.i < this.s.length && TCHAR.test(this.s[this.i] as string)) this.i++;
    const key = this.s.slice(keyStart, this.i);
    const c = this.s[this.i];
    if (c === '=') {
      if (key === '') throw this.fail(XfccErrorCode.EMPTY_KEY, 'empty key before "="');
      this.i++;
      return [key, this.value()];
    }
    if (c === undefined || c === ';' || c === ',') {
      if (key !== '') throw this.fail(XfccErrorCode.MISSING_EQUALS, `key "${key}" has no "=value"`);
      if (elementStart && c !== ';') throw this.fail(XfccErrorCode.EMPTY_ELEMENT, 'empty element');
      throw this.fail(XfccErrorCode.EMPTY_PAIR, 'empty key=value pair');
    }
    if (WHITESPACE.test(c)) {
      const folded = elementStart && this.s[this.i - 1] === ',';
      throw this.fail(
        XfccErrorCode.UNEXPECTED_CHARACTER,
        folded
          ? 'whitespace after "," (separate headers folded into one?)'
          : 'whitespace outside a quoted value',
      );
    }
    throw this.fail(XfccErrorCode.INVALID_KEY, `character ${describe(c)} is not allowed in a key`);
  }

  private value(): string {
    if (this.s[this.i] === '"') return this.quoted();
    const start = this.i;
    for (; this.i < this.s.length; this.i++) {
      const c = this.s[this.i] as string;
      if (c === ';' || c === ',') break;
      if (c === '"' || c === '=' || WHITESPACE.test(c)) {
        throw this.fail(XfccErrorCode.UNEXPECTED_CHARACTER, `unquoted value contains ${describe(c)}`);
      }
    }
    return this.checkLength(this.s.slice(start, this.i));
  }

  private quoted(): string {
    const open = this.i++;
    let out = '';
    for (;;) {
      const c = this.s[this.i];
      if (c === undefined) {
        throw new XfccParseError(
          XfccErrorCode.UNTERMINATED_QUOTE,
          `quote opened at offset ${open} is never closed`,
          open,
        );
      }
      if (c === '"') break;
      if (c === '\\') {
        const next = this.s[this.i + 1];
        if (next === undefined) {
          throw new XfccParseError(
            XfccErrorCode.UNTERMINATED_QUOTE,
            `quote opened at offset ${open} is never closed`,
            open,
          );
        }
        out += next === '"' ? '"' : `\\${next}`;
        this.i += 2;
      } else {
        out += c;
        this.i++;
      }
      // Checked while reading so a huge quoted value stops early.
      if (out.length > this.maxValue) this.checkLength(out);
    }
    this.i++; // closing quote
    const after = this.s[this.i];
    if (after !== undefined && after !== ';' && after !== ',') {
      throw this.fail(XfccErrorCode.UNEXPECTED_CHARACTER, `${describe(after)} after a closing quote`);
    }
    return this.checkLength(out);
  }

  private checkLength(value: string): string {
    if (value.length > this.maxValue || Buffer.byteLength(value, 'utf8') > this.maxValue) {
      throw this.fail(XfccErrorCode.VALUE_TOO_LONG, `value exceeds ${this.maxValue} bytes`);
    }
    return value;
  }

  private assign(element: XfccElement, key: string, value: string): void {
    const lower = key.toLowerCase();
    if (lower === 'by') element.by.push(value);
    else if (lower === 'uri') element.uri.push(value);
    else if (lower === 'dns') element.dns.push(value);
    else if (Object.hasOwn(SINGLE_KEYS, lower)) {
      const field = SINGLE_KEYS[lower as keyof typeof SINGLE_KEYS];
      // A second Subject or Hash would leave consumers guessing which one is real.
      if (element[field] !== undefined)
        throw this.fail(XfccErrorCode.DUPLICATE_KEY, `key ${key} appears twice`);
      element[field] = value;
    } else element.extensions.push({ key, value });
  }

  private fail(code: XfccErrorCode, detail: string): XfccParseError {
    return new XfccParseError(code, `${detail} at offset ${this.i}`, this.i);
  }
}

function describe(c: string): string {
  return c.charCodeAt(0) < 0x7f
    ? `"${c}"`
    : `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}
