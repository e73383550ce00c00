import {
  COLON,
  COMMA,
  HASH,
  LF,
  LPAREN,
  MINUS,
  PLUS,
  parseBigNumber,
  parseDouble,
  parseInteger,
  UNDERSCORE,
} from './bytes.js';
import { protocolError } from './errors.js';
import type { RespValue } from './types.js';

/**
 * Turns a complete one-line reply (`+ - : _ # , (`) into its value, or throws the protocol
 * error for a malformed one. `type` is the type byte, `start..end` the text before CRLF.
 */
export function parseScalarLine(type: number, buf: Buffer, start: number, end: number): RespValue {
  switch (type) {
    case PLUS:
      return { type: 'simple', value: lineText(buf, start, end) };
    case MINUS:
      return { type: 'error', value: lineText(buf, start, end) };
    case COLON: {
      const value = parseInteger(buf, start, end);
      if (value === undefined) throw protocolError('invalid integer');
      return { type: 'integer', value };
    }
    case UNDERSCORE:
      if (end !== start) throw protocolError('invalid null');
      return { type: 'null' };
    case HASH: {
      const c = buf[start];
      if (end - start !== 1 || (c !== 0x74 && c !== 0x66)) throw protocolError('invalid boolean');
      return { type: 'boolean', value: c === 0x74 };
    }
    case COMMA: {
      const value = parseDouble(buf, start, end);
      if (value === undefined) throw protocolError('invalid double');
      return { type: 'double', value };
    }
    case LPAREN: {
      const value = parseBigNumber(buf, start, end);
      if (value === undefined) throw protocolError('invalid big number');
      return { type: 'bignum', value };
    }
    default:
      // The decoder validates type bytes before reading the line, so this is a bug.
      throw new Error(`parseScalarLine: unexpected type byte ${type}`);
  }
}

/** Simple strings and errors: CR/LF inside would make them unencodable, so reject them here. */
function lineText(buf: Buffer, start: number, end: number): string {
  const lf = buf.indexOf(LF, start);
  if (lf !== -1 && lf < end) throw protocolError('invalid line terminator');
  return buf.toString('utf8', start, end);
}
