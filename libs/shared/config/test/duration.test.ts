import { describe, expect, it } from 'vitest';
import { formatDuration, InvalidDurationError, parseDuration } from '../src/index.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['2h', 7_200_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['.5s', 500],
    ['1.s', 1_000],
    ['1h2m3s4ms', 3_723_004],
    ['100us', 0.1],
    ['100µs', 0.1],
    ['100μs', 0.1],
    ['250ns', 0.00025],
    ['-5s', -5_000],
    ['+5s', 5_000],
    ['-0', 0],
  ])('parses %s', (input, ms) => {
    expect(parseDuration(input)).toBeCloseTo(ms, 9);
  });

  it.each(['', '30', '1.5', 's', '.s', '1x', '1S', '5 s', '1s2', '--1s', 'abc', '1e3s'])(
    'rejects %j',
    (input) => {
      expect(() => parseDuration(input)).toThrow(InvalidDurationError);
    },
  );

  it('accepts bare numbers only when a unit is given', () => {
    expect(parseDuration('30', { bareNumberUnit: 's' })).toBe(30_000);
    expect(parseDuration('250', { bareNumberUnit: 'ms' })).toBe(250);
    expect(parseDuration('1.5', { bareNumberUnit: 's' })).toBe(1_500);
  });

  it('rejects values beyond Go int64 nanoseconds', () => {
    expect(() => parseDuration('2562048h')).toThrow(/out of range/);
    expect(parseDuration('2562047h')).toBe(2_562_047 * 3_600_000);
  });

  it('has a stable error code and names the input', () => {
    try {
      parseDuration('nope');
      expect.unreachable();
    } catch (err) {
      expect((err as InvalidDurationError).code).toBe('CONFIG_INVALID_DURATION');
      expect((err as Error).message).toContain('"nope"');
    }
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [1.5, '1.5ms'],
    [0.1, '100µs'],
    [0.00025, '250ns'],
    [1_000, '1s'],
    [1_500, '1.5s'],
    [30_000, '30s'],
    [90_000, '1m30s'],
    [3_600_000, '1h'],
    [7_200_000, '2h'],
    [3_723_004, '1h2m3.004s'],
    [3_660_000, '1h1m'],
    [-1_500, '-1.5s'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [1, 999, 1_000, 61_001, 86_400_000, 0.5, 12_345.678]) {
      expect(parseDuration(formatDuration(ms))).toBeCloseTo(ms, 6);
    }
  });

  it('rejects non-finite input', () => {
    expect(() => formatDuration(Number.NaN)).toThrow(RangeError);
  });
});
