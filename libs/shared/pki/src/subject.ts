import { isIP } from 'node:net';
import { PkiError, PkiErrorCode } from './errors.js';

// X.520 upper bound for commonName.
const MAX_COMMON_NAME = 64;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
const CONTROL = /[\u0000-\u001f\u007f]/;
const DNS_NAME =
  /^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$/;

export function checkCommonName(commonName: string): void {
  if (typeof commonName !== 'string' || commonName.length === 0) {
    throw new PkiError(PkiErrorCode.INVALID_INPUT, 'commonName must be a non-empty string');
  }
  if (commonName.length > MAX_COMMON_NAME) {
    throw new PkiError(
      PkiErrorCode.INVALID_INPUT,
      `commonName must be at most ${MAX_COMMON_NAME} characters`,
    );
  }
  if (CONTROL.test(commonName)) {
    throw new PkiError(PkiErrorCode.INVALID_INPUT, 'commonName must not contain control characters');
  }
}

export function checkDnsName(name: string): void {
  if (name.length > 253 || !DNS_NAME.test(name)) {
    throw new PkiError(PkiErrorCode.INVALID_INPUT, `invalid DNS name ${JSON.stringify(name)}`);
  }
}

export function checkIpAddress(address: string): void {
  if (isIP(address) === 0) {
    throw new PkiError(PkiErrorCode.INVALID_INPUT, `invalid IP address ${JSON.stringify(address)}`);
  }
}

export function checkUri(uri: string): void {
  // URL accepts surrounding whitespace and control characters by stripping them; a SAN must not.
  if (CONTROL.test(uri) || /\s/.test(uri) || !URL.canParse(uri)) {
    throw new PkiError(PkiErrorCode.INVALID_INPUT, `invalid URI ${JSON.stringify(uri)}`);
  }
}
