import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { checkLinks, slug } from '../check-links.mjs';

interface Problem {
  file: string;
  line: number;
  target: string;
  reason: string;
}
const check = checkLinks as (root: string) => Problem[];
const slugOf = slug as (heading: string) => string;
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../check-links.mjs');

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'pp-links-'));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

describe('check-links', () => {
  it("makes GitHub's anchors from headings", () => {
    expect(slugOf('Trust domains: who may call what')).toBe('trust-domains-who-may-call-what');
    expect(slugOf('HTTP/2 settings on both hops')).toBe('http2-settings-on-both-hops');
    expect(slugOf("TLS both ways with `--redis-tls` (argocd-agent's `principal.redis.tls.enabled`)")).toBe(
      'tls-both-ways-with---redis-tls-argocd-agents-principalredistlsenabled',
    );
    expect(slugOf('[libs/errors](libs/errors/README.md) and **bold**')).toBe('libserrors-and-bold');
  });

  it('accepts links to files, folders, headings (numbered duplicates included) and explicit anchors', () => {
    const root = tree({
      'README.md': [
        '# Top',
        '## Usage',
        '## Usage',
        '<a id="custom"></a>',
        'See [docs](docs/guide.md#install-it), [again](docs/guide.md#install-it-1), [dir](docs/),',
        '[here](#usage-1), [custom](#custom), [web](https://example.com/x.md#nothing), [mail](mailto:a@b).',
        '[ref]: docs/guide.md',
      ].join('\n'),
      'docs/guide.md': '# Guide\n\n## Install it\n\n### Install it\n\nBack to [the top](../README.md#top).\n',
    });
    expect(check(root)).toEqual([]);
  });

  it('reports a missing file, a missing heading and a link out of the tree, with file and line', () => {
    const root = tree({
      'README.md': '# Top\n\n[gone](docs/missing.md)\n[anchor](docs/guide.md#nope) [out](../../etc/passwd)\n',
      'docs/guide.md': '# Guide\n[self](#guide) [bad](#not-here)\n',
    });
    expect(check(root)).toEqual([
      { file: 'README.md', line: 3, target: 'docs/missing.md', reason: 'no such file' },
      { file: 'README.md', line: 4, target: 'docs/guide.md#nope', reason: 'no heading #nope' },
      { file: 'README.md', line: 4, target: '../../etc/passwd', reason: 'points outside the repository' },
      { file: 'docs/guide.md', line: 2, target: '#not-here', reason: 'no heading #not-here' },
    ]);
  });

  it('ignores what is not a link: code blocks, code spans, headings inside code blocks', () => {
    const root = tree({
      'README.md': [
        '# Top',
        '```sh',
        '# not a heading',
        'echo [x](missing.md)',
        '```',
        'Inline `[x](missing.md)` is code. [fine](#top) but [broken](#not-a-heading)',
      ].join('\n'),
    });
    expect(check(root)).toEqual([
      { file: 'README.md', line: 6, target: '#not-a-heading', reason: 'no heading #not-a-heading' },
    ]);
  });

  it('fails the run when a link is broken, naming it', () => {
    const root = tree({ 'a.md': '[b](b.md)\n' });
    let out = '';
    try {
      execFileSync(process.execPath, [SCRIPT, `--root=${root}`], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      out = (err as { stderr: string }).stderr;
    }
    expect(out).toContain('a.md:1: b.md: no such file');
    writeFileSync(path.join(root, 'b.md'), '# B\n');
    expect(execFileSync(process.execPath, [SCRIPT, `--root=${root}`], { encoding: 'utf8' })).toContain(
      'every relative link resolves',
    );
  });
});
