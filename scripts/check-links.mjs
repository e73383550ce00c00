// Checks every relative link in every markdown file of the repository: the file or folder it
// names exists, and a `#fragment` into a markdown file names one of its headings (GitHub's
// anchors) or an explicit `<a id>`. Links inside code blocks and code spans are not links;
// URLs with a scheme (https:, mailto:) are not checked. `--root=<dir>` checks another tree.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = new Set(['node_modules', 'dist', '.git', '.nx', 'coverage', '.pullplane']);

/** Every markdown file under `root`, relative paths, sorted. */
export function markdownFiles(root) {
  const out = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIP.has(entry.name)) continue;
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.md')) out.push(path.relative(root, p));
    }
  };
  walk(root);
  return out.sort();
}

/** The text's lines with fenced code blocks blanked (line numbers kept) and code spans removed. */
function proseLines(text) {
  let fence;
  return text.split('\n').map((line) => {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && open) {
      fence = open[1];
      return '';
    }
    if (fence !== undefined) {
      if (line.trimStart().startsWith(fence)) fence = undefined;
      return '';
    }
    return line.replace(/(`+)[^`]*?\1/g, '');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  const text = heading
    .replace(/`/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file offers: its headings (duplicates numbered as GitHub does) and `<a id|name>`. */
export function anchorsOf(text) {
  const anchors = new Set();
  const seen = new Map();
  let fence;
  for (const line of text.split('\n')) {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && open) {
      fence = open[1];
      continue;
    }
    if (fence !== undefined) {
      if (line.trimStart().startsWith(fence)) fence = undefined;
      continue;
    }
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(a[1]);
  }
  return anchors;
}

/** The link targets on a line: inline links and images, and reference definitions. */
function targetsOf(line) {
  const out = [];
  for (const m of line.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g))
    out.push(m[1].replace(/^<|>$/g, ''));
  const def = /^ {0,3}\[[^\]]+\]:\s+(\S+)/.exec(line);
  if (def) out.push(def[1].replace(/^<|>$/g, ''));
  return out;
}

/** Broken links under `root`: `{ file, line, target, reason }`. */
export function checkLinks(root) {
  const problems = [];
  const anchorCache = new Map();
  const anchors = (file) => {
    let a = anchorCache.get(file);
    if (a === undefined) {
      a = anchorsOf(readFileSync(file, 'utf8'));
      anchorCache.set(file, a);
    }
    return a;
  };
  for (const rel of markdownFiles(root)) {
    const file = path.join(root, rel);
    proseLines(readFileSync(file, 'utf8')).forEach((line, i) => {
      for (const target of targetsOf(line)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const hash = target.indexOf('#');
        const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
        const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
        const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), pathPart);
        const report = (reason) => problems.push({ file: rel, line: i + 1, target, reason });
        if (!resolved.startsWith(root)) report('points outside the repository');
        else if (!existsSync(resolved)) report('no such file');
        else if (fragment !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile()) {
          if (!anchors(resolved).has(fragment)) report(`no heading #${fragment}`);
        }
      }
    });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = process.argv.find((a) => a.startsWith('--root='));
  const root = path.resolve(
    arg ? arg.slice('--root='.length) : path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
  );
  const problems = checkLinks(root);
  for (const p of problems) console.error(`${p.file}:${p.line}: ${p.target}: ${p.reason}`);
  if (problems.length > 0) {
    console.error(`${problems.length} broken link(s) in markdown files`);
    process.exit(1);
  }
  console.log(`markdown links: ${markdownFiles(root).length} files checked, every relative link resolves`);
}
