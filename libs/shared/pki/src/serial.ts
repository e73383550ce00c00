import { randomBytes } from 'node:crypto';
import { PkiError, PkiErrorCode } from './errors.js';

/**
 * A random positive 128-bit serial. The top bit is cleared so the DER INTEGER stays
 * positive, and the second is set so the encoding is minimal (no leading zero byte).
 */
export function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes.toString('hex');
}

/**
 * Validates a caller-given hex serial: positive, and at most 20 octets once encoded as a
 * DER INTEGER (RFC 5280), counting the sign octet @peculiar/x509 adds for a high top bit.
 */
export function normaliseSerialNumber(hex: string): string {
  if (!/^[0-9a-fA-F]+$/.test(hex)) {
    throw new PkiError(PkiErrorCode.INVALID_SERIAL, 'serialNumber must be a hexadecimal string');
  }
  let body = hex.toLowerCase().replace(/^0+/, '');
  if (body === '') throw new PkiError(PkiErrorCode.INVALID_SERIAL, 'serialNumber must be greater than zero');
  if (body.length % 2 === 1) body = `0${body}`;
  if (Number.parseInt(body.slice(0, 2), 16) >= 0x80) body = `00${body}`;
  if (body.length > 40) throw new PkiError(PkiErrorCode.INVALID_SERIAL, 'serialNumber must fit in 20 octets');
  return body;
}
