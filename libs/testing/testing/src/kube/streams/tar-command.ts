import { type FileWriter, FsError, type FsNode, type PodFilesystem, resolvePath } from './pod-filesystem.js';
import { type ProcessIo, type Program, readChunks, write } from './process-io.js';
import { dataPadding, encodeHeader, TarFormatError, type TarHeader, trailer } from './tar-format.js';
import { TarReader } from './tar-reader.js';

/**
 * `tar` of the fake containers, as much of GNU tar as `kubectl cp` and hand-written pipelines use:
 * `c`, `x`, `t` with `f` (only `-` is supported: standard input or output), `-C DIR`, `v`, and the
 * accepted no-ops `m`, `o`, `p`, `--no-same-owner`, `--no-same-permissions`. Messages are GNU tar's.
 */

interface TarOptions {
  mode: 'c' | 'x' | 't';
  file: string;
  directory: string | undefined;
  verbose: boolean;
  operands: string[];
}

const IGNORED_LONG = new Set([
  '--no-same-owner',
  '--no-same-permissions',
  '--same-owner',
  '--preserve-permissions',
]);

function parseArgs(args: string[]): TarOptions | string {
  let mode: TarOptions['mode'] | undefined;
  let file: string | undefined;
  let directory: string | undefined;
  let verbose = false;
  const operands: string[] = [];
  const queue = [...args];
  // The first word may be bundled letters without a dash (`tar cf -`), as in traditional tar.
  if (queue[0] !== undefined && !queue[0].startsWith('-')) queue[0] = `-${queue[0]}`;
  while (queue.length > 0) {
    const a = queue.shift()!;
    if (IGNORED_LONG.has(a)) continue;
    if (a.startsWith('--')) {
      const [name, value] = a.split('=', 2) as [string, string | undefined];
      if (name === '--directory') directory = value ?? queue.shift();
      else if (name === '--file') file = value ?? queue.shift();
      else return `unrecognized option '${a}'`;
      continue;
    }
    if (!a.startsWith('-') || a === '-') {
      operands.push(a);
      continue;
    }
    for (let i = 1; i < a.length; i++) {
      const f = a[i]!;
      if (f === 'c' || f === 'x' || f === 't') {
        if (mode && mode !== f) return "You may not specify more than one '-Acdtrux' option";
        mode = f;
      } else if (f === 'v') verbose = true;
      else if (f === 'm' || f === 'o' || f === 'p') continue;
      else if (f === 'f' || f === 'C') {
        const rest = a.slice(i + 1);
        const value = rest !== '' ? rest : queue.shift();
        if (value === undefined) return `option requires an argument -- '${f}'`;
        if (f === 'f') file = value;
        else directory = value;
        break;
      } else if (f === 'z' || f === 'j' || f === 'J')
        return `compression (-${f}) is not supported by the fake tar`;
      else return `invalid option -- '${f}'`;
    }
  }
  if (!mode) return "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options";
  return { mode, file: file ?? '-', directory, verbose, operands };
}

async function tarError(io: ProcessIo, message: string): Promise<void> {
  await write(io.stderr, `tar: ${message}\n`, io.signal);
}

export const tar: Program = async (args, io) => {
  const opts = parseArgs(args);
  if (typeof opts === 'string') {
    await tarError(io, opts);
    await tarError(io, "Try 'tar --help' or 'tar --usage' for more information.");
    return 2;
  }
  if (opts.file !== '-') {
    await tarError(io, `${opts.file}: only standard input/output (-f -) is supported by the fake tar`);
    return 2;
  }
  const base = opts.directory === undefined ? io.cwd : resolvePath(io.cwd, opts.directory);
  if (opts.directory !== undefined && io.fs.lstat(base)?.kind !== 'dir') {
    await tarError(io, `${opts.directory}: Cannot open: No such file or directory`);
    await tarError(io, 'Error is not recoverable: exiting now');
    return 2;
  }
  return opts.mode === 'c' ? create(io, base, opts) : extract(io, base, opts);
};

async function create(io: ProcessIo, base: string, opts: TarOptions): Promise<number> {
  if (opts.operands.length === 0) {
    await tarError(io, 'Cowardly refusing to create an empty archive');
    return 2;
  }
  let failed = false;
  let warnedSlash = false;
  let written = 0;
  const out = async (b: Buffer) => {
    written += b.length;
    await write(io.stdout, b, io.signal);
  };
  const add = async (memberName: string, abs: string, node: FsNode) => {
    if (opts.verbose) await write(io.stderr, `${memberName}\n`, io.signal);
    const header: TarHeader = {
      name: node.kind === 'dir' ? `${memberName}/` : memberName,
      type: node.kind,
      size: node.kind === 'file' ? node.size : 0,
      mode: node.mode,
      mtime: node.mtime,
      linkname: node.kind === 'symlink' ? node.target : '',
    };
    await out(encodeHeader(header));
    if (node.kind === 'file') {
      for (const chunk of [...node.chunks]) await out(chunk);
      await out(dataPadding(node.size));
    } else if (node.kind === 'dir') {
      for (const [name, child] of io.fs.readdir(abs))
        await add(`${memberName}/${name}`, `${abs}/${name}`, child);
    }
  };
  for (const operand of opts.operands) {
    let member = operand.replace(/\/+$/, '') || '/';
    if (member.startsWith('/')) {
      if (!warnedSlash) await tarError(io, "Removing leading `/' from member names");
      warnedSlash = true;
      member = member.replace(/^\/+/, '');
    }
    const abs = resolvePath(base, operand);
    const node = io.fs.lstat(abs);
    if (!node) {
      await tarError(io, `${operand}: Cannot stat: No such file or directory`);
      failed = true;
      continue;
    }
    member =
      member
        .split('/')
        .filter((s) => s !== '' && s !== '.')
        .join('/') || '.';
    await add(member, abs, node);
  }
  await out(trailer(written));
  if (failed) await tarError(io, 'Exiting with failure status due to previous errors');
  return failed ? 2 : 0;
}

/** Where a member goes, or why it is skipped (absolute names lose their `/`, `..` is refused). */
function memberTarget(base: string, name: string): { path: string } | { skip: string } {
  const parts = name.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) return { skip: `${name}: Member name contains '..'` };
  return { path: resolvePath(base, parts.join('/')) };
}

async function extract(io: ProcessIo, base: string, opts: TarOptions): Promise<number> {
  const fs: PodFilesystem = io.fs;
  const messages: string[] = [];
  let failed = false;
  let writer: FileWriter | undefined;
  let writerName = '';
  const reader = new TarReader({
    entry(h) {
      writer = undefined;
      if (opts.mode === 't' || opts.verbose) messages.push(`${h.name}\n`);
      if (opts.mode === 't') return;
      const target = memberTarget(base, h.name);
      if ('skip' in target) {
        messages.push(`tar: ${target.skip}\n`);
        failed = true;
        return;
      }
      try {
        // GNU tar creates missing parent directories of a member.
        const parent = target.path.slice(0, target.path.lastIndexOf('/')) || '/';
        if (fs.lstat(parent)?.kind !== 'dir') fs.mkdir(parent, { parents: true });
        if (h.type === 'dir') fs.mkdir(target.path, { parents: true });
        else if (h.type === 'symlink') fs.symlink(target.path, h.linkname);
        else if (h.type === 'hardlink') {
          const source = memberTarget(base, h.linkname);
          const data = 'path' in source ? fs.readFile(source.path) : Buffer.alloc(0);
          fs.writeFile(target.path, data);
        } else if (h.type === 'file') {
          writer = fs.openWrite(target.path, { mode: h.mode });
          writerName = h.name;
        }
      } catch (err) {
        if (!(err instanceof FsError)) throw err;
        messages.push(`tar: ${h.name}: Cannot open: ${err.message}\n`);
        failed = true;
      }
    },
    data(chunk) {
      if (!writer) return;
      try {
        writer.append(chunk);
      } catch (err) {
        if (!(err instanceof FsError)) throw err;
        messages.push(`tar: ${writerName}: Cannot write: ${err.message}\n`);
        writer = undefined;
        failed = true;
      }
    },
    end() {
      writer = undefined;
    },
  });
  try {
    for await (const chunk of readChunks(io.stdin, io.signal)) {
      reader.push(chunk);
      if (messages.length > 0) {
        const text = messages.splice(0).join('');
        await write(opts.mode === 't' ? io.stdout : io.stderr, text, io.signal);
      }
      if (reader.done) break;
    }
  } catch (err) {
    if (!(err instanceof TarFormatError)) throw err;
    await tarError(io, 'This does not look like a tar archive');
    await tarError(io, 'Exiting with failure status due to previous errors');
    return 2;
  }
  if (reader.truncated) {
    await tarError(io, 'Unexpected EOF in archive');
    await tarError(io, 'Error is not recoverable: exiting now');
    return 2;
  }
  if (failed) await tarError(io, 'Exiting with failure status due to previous errors');
  return failed ? 2 : 0;
}
