/**
 * Splits an inline command line (what telnet / netcat users type) into arguments with the
 * exact rules of Redis' sdssplitargs, so a proxy sees the same arguments the server would:
 * - blanks separate arguments; "double quotes" support \n \r \t \b \a, \xHH and \<any>;
 * - 'single quotes' only support \' ;
 * - a closing quote must be followed by a blank or the end of the line;
 * - a NUL byte ends the line, because sdssplitargs works on a C string.
 */

const BACKSLASH = 0x5c;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const LOWER_X = 0x78;

function isSpace(c: number): boolean {
  // C isspace(): space, \t, \n, \v, \f, \r
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function escapedByte(c: number): number {
  switch (c) {
    case 0x6e: // n
      return 0x0a;
    case 0x72: // r
      return 0x0d;
    case 0x74: // t
      return 0x09;
    case 0x62: // b
      return 0x08;
    case 0x61: // a
      return 0x07;
    default:
      return c;
  }
}

/** Returns the arguments, or undefined when quotes are unbalanced (Redis' "unbalanced quotes" error). */
export function splitInlineArgs(buf: Buffer, start: number, end: number): Buffer[] | undefined {
  // Reading past the end yields 0, which mirrors the C string terminator.
  const at = (i: number): number => (i < end ? buf[i]! : 0);
  const args: Buffer[] = [];
  let p = start;
  for (;;) {
    while (isSpace(at(p))) p++;
    if (at(p) === 0) return args;
    let inDouble = false;
    let inSingle = false;
    let done = false;
    const current: number[] = [];
    while (!done) {
      const c = at(p);
      if (inDouble) {
        if (
          c === BACKSLASH &&
          at(p + 1) === LOWER_X &&
          hexValue(at(p + 2)) >= 0 &&
          hexValue(at(p + 3)) >= 0
        ) {
          current.push(hexValue(at(p + 2)) * 16 + hexValue(at(p + 3)));
          p += 3;
        } else if (c === BACKSLASH && at(p + 1) !== 0) {
          p++;
          current.push(escapedByte(at(p)));
        } else if (c === DQUOTE) {
          if (at(p + 1) !== 0 && !isSpace(at(p + 1))) return undefined;
          done = true;
        } else if (c === 0) {
          return undefined;
        } else {
          current.push(c);
        }
      } else if (inSingle) {
        if (c === BACKSLASH && at(p + 1) === SQUOTE) {
          p++;
          current.push(SQUOTE);
        } else if (c === SQUOTE) {
          if (at(p + 1) !== 0 && !isSpace(at(p + 1))) return undefined;
          done = true;
        } else if (c === 0) {
          return undefined;
        } else {
          current.push(c);
        }
      } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0) {
        // Unquoted arguments end only at these (not at \v or \f), like sdssplitargs.
        done = true;
      } else if (c === DQUOTE) {
        inDouble = true;
      } else if (c === SQUOTE) {
        inSingle = true;
      } else {
        current.push(c);
      }
      if (at(p) !== 0) p++;
    }
    args.push(Buffer.from(current));
  }
}
