import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { parseSoakArgs, SOAK_OPTIONS } from '../soak/options.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel: string) => readFileSync(path.join(root, rel), 'utf8');
const soakSection = () => {
  const doc = read('docs/benchmarks.md');
  const start = doc.indexOf('## Soak\n');
  return doc.slice(start, doc.indexOf('\n## ', start + 1));
};

describe('npm run soak flags', () => {
  it('defaults to 500 agents at 300 req/s for 10 minutes, and --quick to 1 minute', () => {
    expect(parseSoakArgs([])).toMatchObject({
      agents: 500,
      rate: 300,
      durationMs: 600_000,
      deadlineMs: 5_000,
    });
    expect(parseSoakArgs(['--quick'])).toMatchObject({ quick: true, durationMs: 60_000 });
    expect(parseSoakArgs(['--quick', '--duration', '90', '--agents', '100'])).toMatchObject({
      durationMs: 90_000,
      agents: 100,
    });
  });

  it('refuses unknown flags and unusable numbers with the usage line', () => {
    for (const argv of [
      ['--agent', '5'],
      ['--agents', '3'],
      ['--rate', 'fast'],
      ['--watches', '0'],
    ]) {
      const r = parseSoakArgs(argv);
      expect(r).toBeInstanceOf(Error);
      expect((r as Error).message).toMatch(/usage: npm run soak -- \[--quick\]/);
    }
  });

  it('are the flags the docs name, every one of them, and the script the docs run', () => {
    const section = soakSection();
    const named = new Set([...section.matchAll(/`--([a-z-]+)/g)].map((m) => m[1]));
    expect([...named].sort()).toEqual(Object.keys(SOAK_OPTIONS).sort());
    expect(JSON.parse(read('package.json')).scripts.soak).toMatch(/node scripts\/soak\/soak\.mjs$/);
    for (const env of section.matchAll(/`(SOAK_[A-Z_]+)=/g))
      expect(read('scripts/soak/soak.mjs')).toContain(env[1]);
  });
});
