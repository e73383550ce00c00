import { PkiError, PkiErrorCode } from './errors.js';

export interface ValidityOptions {
  /** Lifetime in days when `notAfter` is not given (or used to back-date `notBefore`). */
  validityDays?: number;
  notBefore?: Date;
  notAfter?: Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Back-dating absorbs clock skew between the issuer and the peers that verify the cert. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

/**
 * Resolves the validity window. Explicit dates win and may lie in the past, which is how
 * tests obtain expired certificates.
 */
export function resolveValidity(
  options: ValidityOptions,
  defaultDays: number,
  now: Date = new Date(),
): { notBefore: Date; notAfter: Date } {
  const days = options.validityDays ?? defaultDays;
  if (!Number.isFinite(days) || days <= 0) {
    throw new PkiError(PkiErrorCode.INVALID_VALIDITY, `validityDays must be a positive number, got ${days}`);
  }
  for (const [name, value] of [
    ['notBefore', options.notBefore],
    ['notAfter', options.notAfter],
  ] as const) {
    if (value !== undefined && !(value instanceof Date && Number.isFinite(value.getTime()))) {
      throw new PkiError(PkiErrorCode.INVALID_VALIDITY, `${name} must be a valid Date`);
    }
  }
  const span = days * DAY_MS;
  let notBefore: Date;
  let notAfter: Date;
  if (options.notBefore && options.notAfter) {
    notBefore = options.notBefore;
    notAfter = options.notAfter;
  } else if (options.notBefore) {
    notBefore = options.notBefore;
    notAfter = new Date(notBefore.getTime() + span);
  } else if (options.notAfter) {
    notAfter = options.notAfter;
    notBefore = new Date(notAfter.getTime() - span);
  } else {
    notBefore = new Date(now.getTime() - CLOCK_SKEW_MS);
    notAfter = new Date(now.getTime() + span);
  }
  if (notAfter.getTime() <= notBefore.getTime()) {
    throw new PkiError(
      PkiErrorCode.INVALID_VALIDITY,
      `notAfter (${notAfter.toISOString()}) must be later than notBefore (${notBefore.toISOString()})`,
    );
  }
  return { notBefore, notAfter };
}
