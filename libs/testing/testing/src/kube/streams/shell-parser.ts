/**
 * Parser for the fake containers' `sh`: a POSIX shell subset. Words with single and double quotes
 * and backslash escapes; `$NAME`, `${NAME}`, `$?`, `$#`, `$0`–`$9`; `;`, newlines, `&&`, `||`,
 * pipelines with `!`; redirections `<`, `>`, `>>`, `n>`, `n>&m`; leading `NAME=value`
 * assignments; `#` comments. Command substitution, globbing and control flow (if/for/while) are
 * not part of the subset and are refused as syntax errors, so a test never silently runs
 * something else than it wrote.
 */

export type WordPart =
  | { kind: 'lit'; text: string; quoted: boolean }
  | { kind: 'var'; name: string; quoted: boolean };

export interface Word {
  parts: WordPart[];
}

export interface Redirect {
  fd: number;
  op: '<' | '>' | '>>' | '>&';
  /** A file name, or for `>&` the number of the descriptor to duplicate. */
  target: Word | number;
}

export interface SimpleCommand {
  assignments: Array<{ name: string; value: Word }>;
  words: Word[];
  redirects: Redirect[];
}

export interface Pipeline {
  negate: boolean;
  commands: SimpleCommand[];
}

export interface AndOr {
  first: Pipeline;
  rest: Array<{ op: '&&' | '||'; pipeline: Pipeline }>;
}

export type Script = AndOr[];

export class ShellSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ShellSyntaxError';
  }
}

type Op = ';' | '&&' | '||' | '|' | '<' | '>' | '>>' | '>&';
type Token = { type: 'word'; word: Word; io?: number | undefined } | { type: 'op'; op: Op };

const RESERVED = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'for',
  'while',
  'until',
  'do',
  'done',
  'case',
  'esac',
]);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let parts: WordPart[] | undefined;
  let i = 0;
  const lit = (s: string, quoted: boolean) => {
    parts ??= [];
    const last = parts[parts.length - 1];
    if (last?.kind === 'lit' && last.quoted === quoted) last.text += s;
    else parts.push({ kind: 'lit', text: s, quoted });
  };
  const endWord = () => {
    if (parts) tokens.push({ type: 'word', word: { parts } });
    parts = undefined;
  };
  const variable = (quoted: boolean) => {
    // text[i] is '$'
    const next = text[i + 1] ?? '';
    if (next === '(' || next === '`') throw new ShellSyntaxError('command substitution is not supported');
    if (next === '{') {
      const close = text.indexOf('}', i + 2);
      const name = close < 0 ? '' : text.slice(i + 2, close);
      if (!/^([A-Za-z_][A-Za-z0-9_]*|[0-9?#])$/.test(name)) throw new ShellSyntaxError('bad substitution');
      parts ??= [];
      parts.push({ kind: 'var', name, quoted });
      i = close + 1;
      return;
    }
    const m = /^([A-Za-z_][A-Za-z0-9_]*|[0-9?#@*])/.exec(text.slice(i + 1));
    if (!m) {
      lit('$', quoted);
      i++;
      return;
    }
    parts ??= [];
    parts.push({ kind: 'var', name: m[1]!, quoted });
    i += 1 + m[1]!.length;
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t') {
      endWord();
      i++;
    } else if (c === '\n' || c === ';') {
      endWord();
      tokens.push({ type: 'op', op: ';' });
      i++;
    } else if (c === '#' && parts === undefined) {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '&') {
      if (text[i + 1] !== '&') throw new ShellSyntaxError('background jobs (&) are not supported');
      endWord();
      tokens.push({ type: 'op', op: '&&' });
      i += 2;
    } else if (c === '|') {
      endWord();
      const double = text[i + 1] === '|';
      tokens.push({ type: 'op', op: double ? '||' : '|' });
      i += double ? 2 : 1;
    } else if (c === '>' || c === '<') {
      // `2>`: a word of one unquoted digit right before the operator names the descriptor.
      let io: number | undefined;
      if (
        parts?.length === 1 &&
        parts[0]!.kind === 'lit' &&
        !parts[0]!.quoted &&
        /^[0-9]$/.test(parts[0]!.text)
      ) {
        io = Number(parts[0]!.text);
        parts = undefined;
      }
      endWord();
      let op: Op = c;
      if (c === '>' && text[i + 1] === '>') op = '>>';
      else if (c === '>' && text[i + 1] === '&') op = '>&';
      i += op.length;
      tokens.push({ type: 'op', op });
      if (io !== undefined) tokens.push({ type: 'word', word: { parts: [] }, io });
    } else if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError('unterminated quoted string');
      lit(text.slice(i + 1, close), true);
      i = close + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new ShellSyntaxError('unterminated quoted string');
        const d = text[i]!;
        if (d === '"') break;
        if (d === '`') throw new ShellSyntaxError('command substitution is not supported');
        if (d === '$') variable(true);
        else if (d === '\\' && i + 1 < text.length && '$`"\\\n'.includes(text[i + 1]!)) {
          if (text[i + 1] !== '\n') lit(text[i + 1]!, true);
          i += 2;
        } else {
          lit(d, true);
          i++;
        }
      }
      lit('', true);
      i++;
    } else if (c === '\\') {
      if (text[i + 1] === '\n') i += 2;
      else {
        if (i + 1 >= text.length) throw new ShellSyntaxError('unexpected end of input after \\');
        lit(text[i + 1]!, true);
        i += 2;
      }
    } else if (c === '$') {
      variable(false);
    } else if (c === '`') {
      throw new ShellSyntaxError('command substitution is not supported');
    } else if (c === '(' || c === ')') {
      throw new ShellSyntaxError(`subshells ("${c}") are not supported`);
    } else {
      lit(c, false);
      i++;
    }
  }
  endWord();
  return tokens;
}

function isPlain(word: Word, text: string): boolean {
  return (
    word.parts.length === 1 &&
    word.parts[0]!.kind === 'lit' &&
    !word.parts[0]!.quoted &&
    word.parts[0]!.text === text
  );
}

/** Parses a script; an empty script (only blanks, comments, separators) is an empty list. */
export function parseScript(text: string): Script {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = () => tokens[pos];
  const script: Script = [];

  const command = (): SimpleCommand => {
    const cmd: SimpleCommand = { assignments: [], words: [], redirects: [] };
    for (;;) {
      const t = peek();
      if (!t) break;
      if (t.type === 'op') {
        if (t.op !== '<' && t.op !== '>' && t.op !== '>>' && t.op !== '>&') break;
        pos++;
        let fd = t.op === '<' ? 0 : 1;
        const io = peek();
        if (io?.type === 'word' && io.io !== undefined) {
          fd = io.io;
          pos++;
        }
        const target = tokens[pos++];
        if (target?.type !== 'word' || target.io !== undefined) {
          throw new ShellSyntaxError(`missing file name after ${t.op}`);
        }
        if (t.op === '>&') {
          const n =
            target.word.parts.length === 1 && target.word.parts[0]!.kind === 'lit'
              ? target.word.parts[0]!.text
              : '';
          if (!/^[0-9]$/.test(n)) throw new ShellSyntaxError(`bad file descriptor in >&${n}`);
          cmd.redirects.push({ fd, op: '>&', target: Number(n) });
        } else cmd.redirects.push({ fd, op: t.op, target: target.word });
        continue;
      }
      pos++;
      const first = t.word.parts[0];
      if (cmd.words.length === 0 && first?.kind === 'lit' && !first.quoted) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text);
        if (m) {
          const rest: WordPart[] = [{ kind: 'lit', text: first.text.slice(m[0].length), quoted: false }];
          cmd.assignments.push({ name: m[1]!, value: { parts: [...rest, ...t.word.parts.slice(1)] } });
          continue;
        }
        if (RESERVED.has(first.text) && t.word.parts.length === 1) {
          throw new ShellSyntaxError(`"${first.text}" (control flow) is not supported`);
        }
      }
      cmd.words.push(t.word);
    }
    if (cmd.words.length === 0 && cmd.assignments.length === 0 && cmd.redirects.length === 0) {
      const t = peek();
      throw new ShellSyntaxError(`unexpected ${t?.type === 'op' ? `"${t.op}"` : 'end of input'}`);
    }
    return cmd;
  };

  const pipeline = (): Pipeline => {
    let negate = false;
    const t = peek();
    if (t?.type === 'word' && isPlain(t.word, '!')) {
      negate = true;
      pos++;
    }
    const commands = [command()];
    while (peek()?.type === 'op' && (peek() as { op: Op }).op === '|') {
      pos++;
      commands.push(command());
    }
    return { negate, commands };
  };

  while (pos < tokens.length) {
    const t = peek()!;
    if (t.type === 'op' && t.op === ';') {
      pos++;
      continue;
    }
    const andOr: AndOr = { first: pipeline(), rest: [] };
    for (;;) {
      const n = peek();
      if (n?.type !== 'op' || (n.op !== '&&' && n.op !== '||')) break;
      pos++;
      while (peek()?.type === 'op' && (peek() as { op: Op }).op === ';' && text.includes('\n')) pos++;
      andOr.rest.push({ op: n.op, pipeline: pipeline() });
    }
    const after = peek();
    if (after && !(after.type === 'op' && after.op === ';')) {
      throw new ShellSyntaxError(`unexpected ${after.type === 'op' ? `"${after.op}"` : 'word'}`);
    }
    script.push(andOr);
  }
  return script;
}
