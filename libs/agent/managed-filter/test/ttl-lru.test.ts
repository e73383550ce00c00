import { describe, expect, it } from 'vitest';
import { TtlLru } from '../src/index.js';

describe('TtlLru', () => {
  it('evicts the least recently used entry beyond its bound', () => {
    const c = new TtlLru<string, number>(2, 1000, () => 0);
    c.set('a', 1);
    c.set('b', 2);
    expect(c.get('a')).toBe(1); // a is now most recent
    c.set('c', 3);
    expect(c.has('b')).toBe(false);
    expect(c.get('a')).toBe(1);
    expect(c.get('c')).toBe(3);
    expect(c.size).toBe(2);
  });

  it('expires entries after the TTL, and set refreshes it', () => {
    let now = 0;
    const c = new TtlLru<string, string | null>(10, 5000, () => now);
    c.set('a', null);
    c.set('b', 'x');
    now = 4999;
    expect(c.get('a')).toBeNull();
    c.set('b', 'y');
    now = 5000;
    expect(c.get('a')).toBeUndefined();
    expect(c.get('b')).toBe('y');
    now = 9999;
    expect(c.get('b')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('clears and deletes', () => {
    const c = new TtlLru<string, number>(10, 1000);
    c.set('a', 1);
    c.set('b', 2);
    c.delete('a');
    expect(c.has('a')).toBe(false);
    c.clear();
    expect(c.size).toBe(0);
    expect(() => new TtlLru(0, 1)).toThrow(RangeError);
  });
});
