import { IdentityErrorCode } from './errors.js';
import { type IdentityRejection, quote, reject } from './identity.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
const CONTROL = /[\u0000-\u001f\u007f]/;
// Lone surrogates and astral characters fall inside this range too.
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * Checks shared by every identity header: bounded size, then no CR/LF/NUL or other control
 * characters (header injection, log forging), then ASCII only (look-alike letters).
 */
export function checkHeaderText(
  name: string,
  value: string,
  maxBytes: number,
): IdentityRejection | undefined {
  if (value.length > maxBytes || Buffer.byteLength(value, 'utf8') > maxBytes) {
    return reject(IdentityErrorCode.HEADER_TOO_LONG, `header ${name} exceeds ${maxBytes} bytes`);
  }
  const control = CONTROL.exec(value);
  if (control) {
    const hex = control[0].charCodeAt(0).toString(16).padStart(2, '0');
    return reject(
      IdentityErrorCode.HEADER_CONTROL_CHARACTER,
      `header ${name} contains control character 0x${hex} at offset ${control.index}`,
    );
  }
  const nonAscii = NON_ASCII.exec(value);
  if (nonAscii) {
    return reject(
      IdentityErrorCode.HEADER_NON_ASCII,
      `header ${name} contains non-ASCII character ${quote(nonAscii[0])} at offset ${nonAscii.index}`,
    );
  }
  return undefined;
}
