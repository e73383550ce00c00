import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { FsError, resolvePath } from './pod-filesystem.js';
import { type ProcessIo, type Program, readChunks, sleepFor, write } from './process-io.js';

/** Text-stream commands of the fake containers (busybox wording where it shows). */

const CHUNK = 64 * 1024;

/** An endless stream of `make()` chunks, produced only as fast as it is read. */
function endless(make: () => Buffer): Readable {
  return new Readable({
    read() {
      this.push(make());
    },
  });
}

/** Opens a file for reading: the pod filesystem, or /dev/null, /dev/zero, /dev/urandom. */
export function openInput(io: ProcessIo, path: string): Readable {
  if (path === '-') return io.stdin;
  if (path === '/dev/null') return Readable.from([]);
  if (path === '/dev/zero') return endless(() => Buffer.alloc(CHUNK));
  if (path === '/dev/urandom' || path === '/dev/random') return endless(() => randomBytes(CHUNK));
  const node = io.fs.lstat(resolvePath(io.cwd, path));
  if (!node) throw new FsError('ENOENT', path);
  if (node.kind === 'dir') throw new FsError('EISDIR', path);
  if (node.kind === 'symlink') throw new FsError('ENOENT', path);
  return Readable.from([...node.chunks]);
}

async function fail(io: ProcessIo, message: string, code = 1): Promise<number> {
  await write(io.stderr, `${message}\n`, io.signal);
  return code;
}

/** Backslash escapes of `echo -e` and printf formats. */
function expandEscapes(s: string): { text: string; stop: boolean } {
  let text = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\' || i + 1 >= s.length) {
      text += c;
      continue;
    }
    const n = s[++i]!;
    const simple: Record<string, string> = {
      n: '\n',
      t: '\t',
      r: '\r',
      '\\': '\\',
      a: '\x07',
      b: '\b',
      f: '\f',
      v: '\v',
      e: '\x1b',
    };
    if (n in simple) text += simple[n];
    else if (n === 'c') return { text, stop: true };
    else if (n === '0') {
      const m = /^[0-7]{0,3}/.exec(s.slice(i + 1))![0];
      text += String.fromCharCode(Number.parseInt(m || '0', 8));
      i += m.length;
    } else text += `\\${n}`;
  }
  return { text, stop: false };
}

const echo: Program = async (args, io) => {
  let newline = true;
  let escapes = false;
  while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) {
    const flags = args.shift()!;
    if (flags.includes('n')) newline = false;
    if (flags.includes('e')) escapes = true;
    if (flags.includes('E')) escapes = false;
  }
  let text = args.join(' ');
  if (escapes) {
    const u = expandEscapes(text);
    text = u.text;
    if (u.stop) newline = false;
  }
  await write(io.stdout, newline ? `${text}\n` : text, io.signal);
  return 0;
};

const printf: Program = async (args, io) => {
  const [format, ...rest] = args;
  if (format === undefined) return fail(io, 'printf: usage: printf FORMAT [ARGUMENT...]');
  let out = '';
  let first = true;
  while (first || rest.length > 0) {
    first = false;
    let consumed = false;
    out += format.replace(/%([-0-9.]*)([sdixoc%])/g, (_m, _width: string, conv: string) => {
      if (conv === '%') return '%';
      consumed = true;
      const arg = rest.shift() ?? '';
      if (conv === 's') return arg;
      if (conv === 'c') return arg.slice(0, 1);
      const n = Number.parseInt(arg || '0', 10);
      if (conv === 'x') return n.toString(16);
      if (conv === 'o') return n.toString(8);
      return String(Number.isNaN(n) ? 0 : n);
    });
    if (!consumed) break;
  }
  await write(io.stdout, expandEscapes(out).text, io.signal);
  return 0;
};

const cat: Program = async (args, io) => {
  let status = 0;
  for (const path of args.length === 0 ? ['-'] : args) {
    let input: Readable;
    try {
      input = openInput(io, path);
    } catch (err) {
      if (!(err instanceof FsError)) throw err;
      status = await fail(io, `cat: can't open '${path}': ${err.message}`);
      continue;
    }
    for await (const chunk of readChunks(input, io.signal)) await write(io.stdout, chunk, io.signal);
  }
  return status;
};

const sleep: Program = async (args, io) => {
  let total = 0;
  if (args.length === 0) return fail(io, 'sleep: missing operand');
  for (const a of args) {
    const m = /^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$/.exec(a);
    if (!m) return fail(io, `sleep: invalid number '${a}'`);
    total += Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's']!;
  }
  await sleepFor(total * 1000, io.signal);
  return 0;
};

/** `-n N`, `-c N`, `-nN`, `-N` and (for tail) `+N`: how much and from which end. */
function countOption(
  args: string[],
): { lines: boolean; n: number; fromStart: boolean; files: string[] } | string {
  let lines = true;
  let spec = '10';
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^-([nc])(.*)$/.exec(a);
    if (m) {
      lines = m[1] === 'n';
      spec = m[2] !== '' ? m[2]! : (args[++i] ?? '');
    } else if (/^-\d+$/.test(a)) spec = a.slice(1);
    else files.push(a);
  }
  const fromStart = spec.startsWith('+');
  const n = Number(fromStart ? spec.slice(1) : spec);
  if (!Number.isInteger(n) || n < 0) return `invalid number '${spec}'`;
  return { lines, n, fromStart, files };
}

const head: Program = async (args, io) => {
  const opt = countOption(args);
  if (typeof opt === 'string') return fail(io, `head: ${opt}`);
  let left = opt.n;
  for await (const chunk of readChunks(openInput(io, opt.files[0] ?? '-'), io.signal)) {
    if (left <= 0) break;
    let end = Math.min(chunk.length, left);
    if (opt.lines) {
      end = chunk.length;
      for (let i = 0; i < chunk.length; i++) {
        if (chunk[i] === 0x0a && --left === 0) {
          end = i + 1;
          break;
        }
      }
    } else left -= end;
    await write(io.stdout, chunk.subarray(0, end), io.signal);
  }
  return 0;
};

const tail: Program = async (args, io) => {
  const opt = countOption(args);
  if (typeof opt === 'string') return fail(io, `tail: ${opt}`);
  const input = openInput(io, opt.files[0] ?? '-');
  if (opt.fromStart) {
    // `tail -c +N`: everything from byte N on (kubectl cp resumes a copy this way); streamed.
    let skip = Math.max(0, opt.n - 1);
    for await (const chunk of readChunks(input, io.signal)) {
      let piece = chunk;
      if (opt.lines) {
        let i = 0;
        while (skip > 0 && i < piece.length) if (piece[i++] === 0x0a) skip--;
        piece = piece.subarray(i);
      } else {
        const n = Math.min(skip, piece.length);
        skip -= n;
        piece = piece.subarray(n);
      }
      if (piece.length > 0) await write(io.stdout, piece, io.signal);
    }
    return 0;
  }
  const parts: Buffer[] = [];
  for await (const chunk of readChunks(input, io.signal)) parts.push(chunk);
  const all = Buffer.concat(parts);
  let start = Math.max(0, all.length - opt.n);
  if (opt.lines) {
    start = all.length;
    let seen = all[all.length - 1] === 0x0a ? -1 : 0;
    while (start > 0 && seen < opt.n) {
      if (all[start - 1] === 0x0a && ++seen === opt.n) break;
      start--;
    }
  }
  await write(io.stdout, all.subarray(start), io.signal);
  return 0;
};

const wc: Program = async (args, io) => {
  const flags = args.filter((a) => a.startsWith('-')).join('');
  const files = args.filter((a) => !a.startsWith('-'));
  let lines = 0;
  let words = 0;
  let bytes = 0;
  let inWord = false;
  for await (const chunk of readChunks(openInput(io, files[0] ?? '-'), io.signal)) {
    bytes += chunk.length;
    for (const b of chunk) {
      if (b === 0x0a) lines++;
      const space = b === 0x20 || (b >= 0x09 && b <= 0x0d);
      if (!space && !inWord) words++;
      inWord = !space;
    }
  }
  const chosen = [
    flags.includes('l') && lines,
    flags.includes('w') && words,
    flags.includes('c') && bytes,
  ].filter((v): v is number => v !== false);
  const values = chosen.length > 0 ? chosen : [lines, words, bytes];
  const text = values.length === 1 ? String(values[0]) : values.map((v) => String(v).padStart(7)).join(' ');
  await write(io.stdout, `${text}${files[0] ? ` ${files[0]}` : ''}\n`, io.signal);
  return 0;
};

const seq: Program = async (args, io) => {
  const nums = args.map(Number);
  if (nums.length === 0 || nums.length > 3 || nums.some((n) => !Number.isFinite(n))) {
    return fail(io, 'seq: usage: seq [FIRST [INC]] LAST');
  }
  const [first, inc, last] =
    nums.length === 1
      ? [1, 1, nums[0]!]
      : nums.length === 2
        ? [nums[0]!, 1, nums[1]!]
        : [nums[0]!, nums[1]!, nums[2]!];
  if (inc === 0) return fail(io, 'seq: increment must not be 0');
  let batch = '';
  for (let n = first; inc > 0 ? n <= last : n >= last; n += inc) {
    batch += `${n}\n`;
    if (batch.length >= CHUNK) {
      await write(io.stdout, batch, io.signal);
      batch = '';
    }
  }
  await write(io.stdout, batch, io.signal);
  return 0;
};

const stty: Program = async (args, io) => {
  const terminal = io.terminal;
  if (!terminal) return fail(io, 'stty: standard input: Not a tty');
  if (args[0] === 'size') {
    const size = terminal.size ?? { width: 80, height: 24 };
    await write(io.stdout, `${size.height} ${size.width}\n`, io.signal);
    return 0;
  }
  if (args.length === 1 && (args[0] === 'echo' || args[0] === '-echo')) {
    terminal.echo = args[0] === 'echo';
    return 0;
  }
  return fail(io, `stty: unsupported setting: ${args.join(' ')} (the fake terminal knows size, echo, -echo)`);
};

export const TEXT_COMMANDS: Record<string, Program> = {
  echo,
  printf,
  cat,
  sleep,
  head,
  tail,
  wc,
  seq,
  stty,
  true: async () => 0,
  false: async () => 1,
};
