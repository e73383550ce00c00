import { InvalidDurationError } from './errors.js';

/** Unit used when a bare number (no unit suffix) is accepted. */
export type BareNumberUnit = 'ms' | 's';

export interface ParseDurationOptions {
  /** Accept `30` as 30 of this unit; by default bare numbers (other than `0`) are rejected, like Go. */
  readonly bareNumberUnit?: BareNumberUnit;
}

// Exact integer nanoseconds keep `1.1s` from turning into 1100.0000000000002 ms.
const UNIT_NS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_NS = 2n ** 63n - 1n; // Go's time.Duration is an int64 of nanoseconds
const COMPONENT = /(\d*)(?:\.(\d*))?([^\d.]*)/y;
const BARE_NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)$/;

/** Why `s` is not a duration, or the duration in nanoseconds; the reason never contains `s`. */
export function parseDurationNs(s: string, opts: ParseDurationOptions = {}): bigint | { reason: string } {
  let rest = s;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-');
    rest = rest.slice(1);
  }
  if (rest === '0') return 0n;
  if (rest === '') return { reason: 'is not a duration' };
  if (BARE_NUMBER.test(s)) {
    if (opts.bareNumberUnit === undefined) return { reason: 'is not a duration (missing unit, e.g. "30s")' };
    rest = `${rest}${opts.bareNumberUnit}`;
  }
  let total = 0n;
  let pos = 0;
  while (pos < rest.length) {
    COMPONENT.lastIndex = pos;
    const m = COMPONENT.exec(rest);
    const [whole = '', intDigits = '', fracDigits, unit = ''] = m ?? [];
    if (whole === '' || (intDigits === '' && (fracDigits ?? '') === '')) {
      return { reason: 'is not a duration' };
    }
    if (unit === '') return { reason: 'is not a duration (missing unit, e.g. "30s")' };
    const unitNs = UNIT_NS[unit];
    if (unitNs === undefined) {
      return { reason: 'is not a duration (valid units: ns, us, ms, s, m, h)' };
    }
    total += BigInt(intDigits || '0') * unitNs;
    if (fracDigits) {
      total += (BigInt(fracDigits) * unitNs) / 10n ** BigInt(fracDigits.length);
    }
    if (total > MAX_NS) return { reason: 'is out of range for a duration' };
    pos += whole.length;
  }
  return negative ? -total : total;
}

/**
 * Parses a Go `time.ParseDuration` string (`300ms`, `1m30s`, `2h`, `1.5s`, `-5s`, `0`) into milliseconds.
 * Sub-millisecond units yield fractional milliseconds.
 */
export function parseDuration(s: string, opts: ParseDurationOptions = {}): number {
  const ns = parseDurationNs(s, opts);
  if (typeof ns !== 'bigint') throw new InvalidDurationError(`${JSON.stringify(s)} ${ns.reason}`);
  return nsToMs(ns);
}

export function nsToMs(ns: bigint): number {
  const whole = ns / 1_000_000n;
  return Number(whole) + Number(ns - whole * 1_000_000n) / 1e6;
}

/**
 * Formats milliseconds as a compact Go-style duration that `parseDuration` reads back:
 * `500ms`, `30s`, `1m30s`, `2h`, `1.5s`. Zero components are omitted (Go prints `2h0m0s`).
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format ${ms} as a duration`);
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  if (ns < 0n) ns = -ns;
  if (ns < 1_000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${decimal(ns, 1_000n)}µs`;
  if (ns < 1_000_000_000n) return `${sign}${decimal(ns, 1_000_000n)}ms`;
  const h = ns / 3_600_000_000_000n;
  ns -= h * 3_600_000_000_000n;
  const m = ns / 60_000_000_000n;
  ns -= m * 60_000_000_000n;
  let out = sign;
  if (h > 0n) out += `${h}h`;
  if (m > 0n) out += `${m}m`;
  if (ns > 0n) out += `${decimal(ns, 1_000_000_000n)}s`;
  return out;
}

/** `value / unit` as a decimal string without trailing zeros. */
function decimal(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const frac = value % unit;
  if (frac === 0n) return whole.toString();
  const digits = unit.toString().length - 1;
  return `${whole}.${frac.toString().padStart(digits, '0').replace(/0+$/, '')}`;
}
