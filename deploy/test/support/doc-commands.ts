// The commands the Markdown files show, as a shell would see them: fenced `sh` blocks split into
// simple commands (continuations joined, pipes, `&&`, `;` and `&` separating them, comments and
// leading assignments dropped, variables replaced by a placeholder word), and inline code spans.
// The docs tests parse the `pullplane` ones with the CLI's own parser and check the `kubectl`
// ones against kubectl's own help, so a documented command cannot name an option that is gone.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface DocCommand {
  file: string;
  line: number;
  /** The words of the command, quotes removed; `$VAR`, `${VAR}` and `$(…)` became `VALUE`. */
  words: string[];
  /** From a fenced block (a complete command) or an inline code span (possibly a fragment). */
  from: 'block' | 'span';
}

export interface DocBlock {
  file: string;
  line: number;
  lang: string;
  text: string;
  /** The heading the block is under. */
  heading: string;
}

const SHELL = new Set(['sh', 'bash', 'shell']);

/** Every fenced block of a Markdown file, with its language and the heading above it. */
export function blocksOf(root: string, file: string): DocBlock[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const out: DocBlock[] = [];
  let heading = '';
  let open: { fence: string; lang: string; line: number; indent: number; body: string[] } | undefined;
  lines.forEach((line, i) => {
    const fence = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (open) {
      if (fence && fence[2]!.startsWith(open.fence) && line.trim() === fence[2]) {
        out.push({ file, line: open.line, lang: open.lang, text: open.body.join('\n'), heading });
        open = undefined;
      } else open.body.push(line.slice(Math.min(open.indent, line.length - line.trimStart().length)));
      return;
    }
    if (fence) {
      open = { fence: fence[2]!, lang: fence[3] ?? '', line: i + 1, indent: fence[1]!.length, body: [] };
      return;
    }
    const h = /^#{1,6}\s+(.*?)\s*$/.exec(line);
    if (h) heading = h[1]!;
  });
  return out;
}

/** The `sh` blocks of a file. */
export function shellBlocks(root: string, file: string): DocBlock[] {
  return blocksOf(root, file).filter((b) => SHELL.has(b.lang));
}

/** Shell words of one line of commands; separators come back as their own words. */
function tokens(text: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  const push = () => {
    if (word !== undefined) out.push(word);
    word = undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let s = '';
      while (j < text.length && text[j] !== '"') {
        if (text[j] === '\\' && j + 1 < text.length) j++;
        s += text[j];
        j++;
      }
      word = (word ?? '') + expand(s);
      i = j;
    } else if (c === '$') {
      const m = /^\$(\([^)]*\)|\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)/.exec(text.slice(i));
      word = (word ?? '') + (m ? 'VALUE' : '$');
      i += m ? m[0].length - 1 : 0;
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '<' && /^<[\w.…-]+>/.test(text.slice(i))) {
      // A placeholder (`<pod>`, `<name>`): one word, as the reader substitutes it.
      const m = /^<[\w.…-]+>/.exec(text.slice(i))!;
      word = (word ?? '') + m[0];
      i += m[0].length - 1;
    } else if (c === '>' || c === '<') {
      // A redirection (`> file`, `2>&1`, `< in`): neither it nor its target is an argument.
      if (word !== undefined && /^\d$/.test(word)) word = undefined;
      push();
      while (text[i + 1] === '>' || text[i + 1] === '&') i++;
      const target = /^\s*(\S+)/.exec(text.slice(i + 1));
      if (target) i += target[0].length;
    } else if (/\s/.test(c)) {
      push();
    } else if ('|&;'.includes(c)) {
      push();
      const two = text.slice(i, i + 2);
      if (two === '&&' || two === '||') i++;
      out.push(';');
    } else word = (word ?? '') + c;
  }
  push();
  return out;
}

const expand = (s: string) => s.replace(/\$(\([^)]*\)|\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)/g, 'VALUE');
const KEYWORDS = new Set(['do', 'then', 'else', 'time', 'exec', 'done', 'fi', '!']);

/** Simple commands of a shell text: words, with assignments and control keywords dropped. */
export function commandsOf(text: string): string[][] {
  const joined = text.replace(/\\\n/g, ' ');
  const out: string[][] = [];
  for (const line of joined.split('\n')) {
    let current: string[] = [];
    const flush = () => {
      while (current.length && (KEYWORDS.has(current[0]!) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(current[0]!)))
        current.shift();
      if (current[0] === 'for' || current[0] === 'while' || current[0] === 'if') current = [];
      if (current.length) out.push(current);
      current = [];
    };
    for (const t of tokens(line)) {
      if (t === ';') flush();
      else current.push(t);
    }
    flush();
  }
  return out;
}

/** `pullplane …`, `npx pullplane …`, `npm run cli -- …`: the CLI's arguments, or undefined. */
export function pullplaneArgs(words: string[]): string[] | undefined {
  if (words[0] === 'pullplane') return words.slice(1);
  if (words[0] === 'npx' && words[1] === 'pullplane') return words.slice(2);
  if (words[0] === 'npm' && words[1] === 'run' && words[2] === 'cli')
    return words[3] === '--' ? words.slice(4) : [];
  return undefined;
}

/** Every command of every Markdown file: block commands and inline spans that start with a program. */
export function docCommands(root: string, files: string[], programs: RegExp): DocCommand[] {
  const out: DocCommand[] = [];
  for (const file of files) {
    for (const block of shellBlocks(root, file)) {
      // Line numbers: the block's first line, close enough to find the command.
      for (const words of commandsOf(block.text))
        if (programs.test(words.join(' '))) out.push({ file, line: block.line, words, from: 'block' });
    }
    let fence = false;
    readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (/^\s*(`{3,}|~{3,})/.test(line)) fence = !fence;
        if (fence) return;
        for (const m of line.matchAll(/(`+)([^`]+?)\1/g)) {
          const span = m[2]!.trim();
          if (!programs.test(span)) continue;
          for (const words of commandsOf(span))
            if (programs.test(words.join(' '))) out.push({ file, line: i + 1, words, from: 'span' });
        }
      });
  }
  return out;
}
