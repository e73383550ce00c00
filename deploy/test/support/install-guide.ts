// What an install guide tells the operator to create: the tables under a heading whose first
// column is `Secret` or `ConfigMap` (name, keys, who creates it), and the `sh` blocks there that
// create them. deploy/README.md and `pullplane migrate`'s MIGRATION.md are read this way, so the
// bundles are checked against what the operator is told, not against a list kept in a test.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEPLOY_DIR } from './render.js';

/** A section of a Markdown file under deploy/: the heading's text (exact, or a pattern). */
export interface GuideRef {
  file: string;
  heading: string | RegExp;
}

export interface GuideObject {
  kind: 'Secret' | 'ConfigMap';
  name: string;
  keys: string[];
  /** Who creates it: the operator ("you"), or another installation ("Argo CD"). */
  source: string;
  /** Where it is documented. */
  ref: string;
}

interface Section {
  level: number;
  title: string;
  lines: string[];
}

const cache = new Map<string, Section[]>();

/** Each heading with the lines up to the next heading of the same or a higher level. */
function sections(file: string): Section[] {
  let found = cache.get(file);
  if (found) return found;
  const lines = readFileSync(path.join(DEPLOY_DIR, file), 'utf8').split('\n');
  const headings: Array<{ level: number; title: string; at: number }> = [];
  let fence = false;
  lines.forEach((line, at) => {
    if (/^\s*```/.test(line)) fence = !fence;
    const m = fence ? null : /^(#{1,6})\s+(.*?)\s*$/.exec(line);
    if (m) headings.push({ level: m[1]!.length, title: m[2]!, at });
  });
  found = headings.map((h, i) => {
    const end = headings.slice(i + 1).find((n) => n.level <= h.level)?.at ?? lines.length;
    return { level: h.level, title: h.title, lines: lines.slice(h.at + 1, end) };
  });
  cache.set(file, found);
  return found;
}

const describeRef = (ref: GuideRef) => `${ref.file} "${String(ref.heading)}"`;

function section(ref: GuideRef): Section {
  const matches = sections(ref.file).filter((s) =>
    typeof ref.heading === 'string' ? s.title === ref.heading : ref.heading.test(s.title),
  );
  if (matches.length !== 1)
    throw new Error(`${describeRef(ref)}: ${matches.length} headings match, expected one`);
  return matches[0]!;
}

const cells = (row: string) =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());
/** `a`, `b` → [a, b]: the backquoted names in a cell. */
const quoted = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The Secrets and ConfigMaps the section's tables list. */
export function guideObjects(ref: GuideRef): GuideObject[] {
  const lines = section(ref).lines;
  const out: GuideObject[] = [];
  for (let i = 0; i < lines.length; i++) {
    const header = cells(lines[i]!);
    if (!lines[i]!.trim().startsWith('|') || !['Secret', 'ConfigMap'].includes(header[0]!)) continue;
    const keysAt = header.indexOf('keys');
    const sourceAt = header.indexOf('created by');
    if (keysAt < 0 || sourceAt < 0)
      throw new Error(`${describeRef(ref)}: a ${header[0]} table needs "keys" and "created by" columns`);
    for (i += 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) {
      const row = cells(lines[i]!);
      const [name] = quoted(row[0]!);
      if (!name) throw new Error(`${describeRef(ref)}: row without a \`name\`: ${lines[i]}`);
      out.push({
        kind: header[0] as GuideObject['kind'],
        name,
        keys: quoted(row[keysAt] ?? ''),
        source: (row[sourceAt] ?? '').replace(/`/g, ''),
        ref: describeRef(ref),
      });
    }
  }
  return out;
}

/** What a list of guides documents, the first listing of each object winning. */
export function documented(refs: readonly GuideRef[]): Map<string, GuideObject> {
  const out = new Map<string, GuideObject>();
  for (const ref of refs)
    for (const o of guideObjects(ref)) if (!out.has(`${o.kind}/${o.name}`)) out.set(`${o.kind}/${o.name}`, o);
  return out;
}

/** The `sh` blocks of a section, in order. */
export function guideScripts(ref: GuideRef): string[] {
  const lines = section(ref).lines;
  const blocks: string[] = [];
  let current: string[] | undefined;
  for (const line of lines) {
    if (current === undefined && /^\s*```sh\s*$/.test(line)) current = [];
    else if (current !== undefined && /^\s*```\s*$/.test(line)) {
      blocks.push(current.map((l) => l.replace(/^ {3}/, '')).join('\n'));
      current = undefined;
    } else current?.push(line);
  }
  return blocks;
}
