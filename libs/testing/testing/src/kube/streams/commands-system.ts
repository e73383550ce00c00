import { FsError, type FsNode, resolvePath } from './pod-filesystem.js';
import { type ProcessIo, type Program, write } from './process-io.js';

/** Filesystem and system-information commands of the fake containers (busybox wording). */

function flagsAndOperands(args: string[]): { flags: Set<string>; operands: string[] } {
  const flags = new Set<string>();
  const operands: string[] = [];
  let done = false;
  for (const a of args) {
    if (!done && a === '--') done = true;
    else if (!done && /^-[A-Za-z0-9]+$/.test(a)) for (const f of a.slice(1)) flags.add(f);
    else operands.push(a);
  }
  return { flags, operands };
}

async function say(io: ProcessIo, text: string): Promise<void> {
  await write(io.stdout, text, io.signal);
}

async function complain(io: ProcessIo, text: string): Promise<void> {
  await write(io.stderr, `${text}\n`, io.signal);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function modeString(node: FsNode): string {
  const type = node.kind === 'dir' ? 'd' : node.kind === 'symlink' ? 'l' : '-';
  let bits = '';
  for (let shift = 6; shift >= 0; shift -= 3) {
    const m = (node.mode >> shift) & 7;
    bits += `${m & 4 ? 'r' : '-'}${m & 2 ? 'w' : '-'}${m & 1 ? 'x' : '-'}`;
  }
  return type + bits;
}

function longLine(name: string, node: FsNode): string {
  const size = node.kind === 'file' ? node.size : node.kind === 'dir' ? 4096 : node.target.length;
  const t = node.mtime;
  const when = `${MONTHS[t.getUTCMonth()]} ${String(t.getUTCDate()).padStart(2)} ${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`;
  const link = node.kind === 'symlink' ? ` -> ${node.target}` : '';
  return `${modeString(node)}    1 root     root     ${String(size).padStart(9)} ${when} ${name}${link}\n`;
}

const ls: Program = async (args, io) => {
  const { flags, operands } = flagsAndOperands(args);
  const all = flags.has('a');
  const long = flags.has('l');
  let status = 0;
  const targets = operands.length > 0 ? operands : ['.'];
  for (const [i, target] of targets.entries()) {
    const node = io.fs.lstat(resolvePath(io.cwd, target));
    if (!node) {
      await complain(io, `ls: ${target}: No such file or directory`);
      status = 1;
      continue;
    }
    if (node.kind !== 'dir' || flags.has('d')) {
      await say(io, long ? longLine(target, node) : `${target}\n`);
      continue;
    }
    if (targets.length > 1) await say(io, `${i > 0 ? '\n' : ''}${target}:\n`);
    let out = '';
    for (const [name, child] of io.fs.readdir(resolvePath(io.cwd, target))) {
      if (!all && name.startsWith('.')) continue;
      out += long ? longLine(name, child) : `${name}\n`;
    }
    await say(io, out);
  }
  return status;
};

const mkdir: Program = async (args, io) => {
  const { flags, operands } = flagsAndOperands(args);
  let status = 0;
  for (const dir of operands) {
    try {
      io.fs.mkdir(resolvePath(io.cwd, dir), { parents: flags.has('p') });
    } catch (err) {
      if (!(err instanceof FsError)) throw err;
      await complain(io, `mkdir: can't create directory '${dir}': ${err.message}`);
      status = 1;
    }
  }
  return status;
};

const rm: Program = async (args, io) => {
  const { flags, operands } = flagsAndOperands(args);
  let status = 0;
  for (const path of operands) {
    const abs = resolvePath(io.cwd, path);
    const node = io.fs.lstat(abs);
    if (!node) {
      if (!flags.has('f')) {
        await complain(io, `rm: can't remove '${path}': No such file or directory`);
        status = 1;
      }
      continue;
    }
    if (node.kind === 'dir' && !flags.has('r') && !flags.has('R')) {
      await complain(io, `rm: '${path}' is a directory`);
      status = 1;
      continue;
    }
    io.fs.remove(abs, { recursive: true });
  }
  return status;
};

const touch: Program = async (args, io) => {
  for (const path of flagsAndOperands(args).operands) {
    const abs = resolvePath(io.cwd, path);
    const node = io.fs.lstat(abs);
    try {
      if (node) node.mtime = new Date();
      else io.fs.openWrite(abs);
    } catch (err) {
      if (!(err instanceof FsError)) throw err;
      await complain(io, `touch: ${path}: ${err.message}`);
      return 1;
    }
  }
  return 0;
};

/** `test` / `[`: file tests, string tests and integer comparisons, with `!`. */
function evaluate(args: string[], io: ProcessIo): boolean | string {
  if (args[0] === '!') {
    const inner = evaluate(args.slice(1), io);
    return typeof inner === 'string' ? inner : !inner;
  }
  if (args.length === 0) return false;
  if (args.length === 1) return args[0] !== '';
  if (args.length === 2) {
    const [op, operand = ''] = args;
    const node = () => io.fs.lstat(resolvePath(io.cwd, operand));
    switch (op) {
      case '-e':
        return node() !== undefined;
      case '-d':
        return node()?.kind === 'dir';
      case '-f':
        return node()?.kind === 'file';
      case '-L':
      case '-h':
        return node()?.kind === 'symlink';
      case '-s': {
        const n = node();
        return n?.kind === 'file' && n.size > 0;
      }
      case '-r':
      case '-w':
      case '-x':
        return node() !== undefined;
      case '-z':
        return operand === '';
      case '-n':
        return operand !== '';
      default:
        return `test: ${op}: unary operator expected`;
    }
  }
  if (args.length === 3) {
    const [a = '', op, b = ''] = args;
    if (op === '=' || op === '==') return a === b;
    if (op === '!=') return a !== b;
    const x = Number(a);
    const y = Number(b);
    if (['-eq', '-ne', '-lt', '-le', '-gt', '-ge'].includes(op ?? '')) {
      if (!Number.isInteger(x) || !Number.isInteger(y))
        return `test: ${Number.isInteger(x) ? b : a}: integer expected`;
      return { '-eq': x === y, '-ne': x !== y, '-lt': x < y, '-le': x <= y, '-gt': x > y, '-ge': x >= y }[
        op!
      ]!;
    }
    return `test: ${op}: unknown operand`;
  }
  return 'test: too many arguments';
}

function testProgram(bracket: boolean): Program {
  return async (args, io) => {
    let operands = args;
    if (bracket) {
      if (args[args.length - 1] !== ']') {
        await complain(io, '[: missing ]');
        return 2;
      }
      operands = args.slice(0, -1);
    }
    const result = evaluate(operands, io);
    if (typeof result === 'string') {
      await complain(io, `sh: ${result}`);
      return 2;
    }
    return result ? 0 : 1;
  };
}

export const SYSTEM_COMMANDS: Record<string, Program> = {
  ls,
  mkdir,
  rm,
  touch,
  test: testProgram(false),
  '[': testProgram(true),
  pwd: async (_args, io) => {
    await say(io, `${io.cwd}\n`);
    return 0;
  },
  env: async (_args, io) => {
    await say(io, [...io.env].map(([k, v]) => `${k}=${v}\n`).join(''));
    return 0;
  },
  hostname: async (_args, io) => {
    await say(io, `${io.env.get('HOSTNAME') ?? 'localhost'}\n`);
    return 0;
  },
  id: async (_args, io) => {
    await say(io, 'uid=0(root) gid=0(root) groups=0(root)\n');
    return 0;
  },
  whoami: async (_args, io) => {
    await say(io, 'root\n');
    return 0;
  },
  uname: async (args, io) => {
    const host = io.env.get('HOSTNAME') ?? 'localhost';
    await say(io, args.includes('-a') ? `Linux ${host} 6.1.0-fake #1 SMP x86_64 GNU/Linux\n` : 'Linux\n');
    return 0;
  },
};
