/**
 * A container's filesystem in memory: directories, regular files and symlinks, with a size quota,
 * enough for `kubectl cp` (tar both ways), shell redirections and `ls`. Paths are POSIX; symlinks
 * are stored and archived but not followed.
 */

export type FsNode = DirNode | FileNode | SymlinkNode;

export interface DirNode {
  kind: 'dir';
  mode: number;
  mtime: Date;
  entries: Map<string, FsNode>;
}

export interface FileNode {
  kind: 'file';
  mode: number;
  mtime: Date;
  chunks: Buffer[];
  size: number;
}

export interface SymlinkNode {
  kind: 'symlink';
  mode: number;
  mtime: Date;
  target: string;
}

export type FsErrorCode = 'ENOENT' | 'ENOTDIR' | 'EISDIR' | 'EEXIST' | 'ENOSPC' | 'ENOTEMPTY' | 'EINVAL';

const MESSAGES: Record<FsErrorCode, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EEXIST: 'File exists',
  ENOSPC: 'No space left on device',
  ENOTEMPTY: 'Directory not empty',
  EINVAL: 'Invalid argument',
};

/** A failed filesystem call; `message` is the strerror text tools print. */
export class FsError extends Error {
  constructor(
    readonly code: FsErrorCode,
    readonly path: string,
  ) {
    super(MESSAGES[code]);
    this.name = 'FsError';
  }
}

/** Normalises `path` against `cwd` into an absolute path without `.`, `..` or doubled slashes. */
export function resolvePath(cwd: string, path: string): string {
  const parts: string[] = [];
  for (const seg of `${path.startsWith('/') ? '' : cwd}/${path}`.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join('/')}`;
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

export class PodFilesystem {
  private readonly root: DirNode = { kind: 'dir', mode: 0o755, mtime: new Date(), entries: new Map() };
  private used = 0;

  constructor(readonly limitBytes = 64 * 1024 * 1024) {}

  /** Bytes held by regular files. */
  get usedBytes(): number {
    return this.used;
  }

  lstat(path: string): FsNode | undefined {
    let node: FsNode = this.root;
    for (const seg of split(path)) {
      if (node.kind !== 'dir') return undefined;
      const next = node.entries.get(seg);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }

  private parentOf(path: string): { dir: DirNode; name: string } {
    const segs = split(path);
    const name = segs.pop();
    if (name === undefined) throw new FsError('EEXIST', path);
    const dir = this.lstat(`/${segs.join('/')}`);
    if (!dir) throw new FsError('ENOENT', path);
    if (dir.kind !== 'dir') throw new FsError('ENOTDIR', path);
    return { dir, name };
  }

  mkdir(path: string, opts: { parents?: boolean; mode?: number } = {}): void {
    const existing = this.lstat(path);
    if (existing) {
      if (existing.kind === 'dir' && opts.parents) return;
      throw new FsError(existing.kind === 'dir' ? 'EEXIST' : 'ENOTDIR', path);
    }
    if (opts.parents) {
      const segs = split(path);
      for (let i = 1; i < segs.length; i++) {
        const p = `/${segs.slice(0, i).join('/')}`;
        const node = this.lstat(p);
        if (!node) this.mkdir(p);
        else if (node.kind !== 'dir') throw new FsError('ENOTDIR', p);
      }
    }
    const { dir, name } = this.parentOf(path);
    dir.entries.set(name, { kind: 'dir', mode: opts.mode ?? 0o755, mtime: new Date(), entries: new Map() });
  }

  /** Opens a file for writing (created or truncated), for content that arrives in pieces. */
  openWrite(path: string, opts: { append?: boolean; mode?: number | undefined } = {}): FileWriter {
    const { dir, name } = this.parentOf(path);
    let node = dir.entries.get(name);
    if (node?.kind === 'dir') throw new FsError('EISDIR', path);
    if (node?.kind !== 'file') {
      if (node) this.remove(path);
      node = { kind: 'file', mode: opts.mode ?? 0o644, mtime: new Date(), chunks: [], size: 0 };
      dir.entries.set(name, node);
    } else if (!opts.append) {
      this.used -= node.size;
      node.chunks = [];
      node.size = 0;
    }
    if (opts.mode !== undefined) node.mode = opts.mode;
    return new FileWriter(this, node, path);
  }

  writeFile(path: string, data: Buffer | string, mode?: number): void {
    const w = this.openWrite(path, { mode });
    w.append(typeof data === 'string' ? Buffer.from(data) : data);
  }

  symlink(path: string, target: string): void {
    const { dir, name } = this.parentOf(path);
    if (dir.entries.has(name)) this.remove(path);
    dir.entries.set(name, { kind: 'symlink', mode: 0o777, mtime: new Date(), target });
  }

  readFile(path: string): Buffer {
    const node = this.lstat(path);
    if (!node) throw new FsError('ENOENT', path);
    if (node.kind === 'dir') throw new FsError('EISDIR', path);
    if (node.kind === 'symlink') throw new FsError('EINVAL', path);
    return Buffer.concat(node.chunks);
  }

  /** A directory's entries, sorted by name. */
  readdir(path: string): Array<[string, FsNode]> {
    const node = this.lstat(path);
    if (!node) throw new FsError('ENOENT', path);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    return [...node.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  remove(path: string, opts: { recursive?: boolean } = {}): void {
    const { dir, name } = this.parentOf(path);
    const node = dir.entries.get(name);
    if (!node) throw new FsError('ENOENT', path);
    if (node.kind === 'dir' && node.entries.size > 0 && !opts.recursive) throw new FsError('ENOTEMPTY', path);
    this.used -= sizeOf(node);
    dir.entries.delete(name);
  }

  /** Accounts bytes written through a FileWriter; throws ENOSPC past the quota. */
  reserve(bytes: number, path: string): void {
    if (this.used + bytes > this.limitBytes) throw new FsError('ENOSPC', path);
    this.used += bytes;
  }
}

function sizeOf(node: FsNode): number {
  if (node.kind === 'file') return node.size;
  if (node.kind === 'symlink') return 0;
  let n = 0;
  for (const child of node.entries.values()) n += sizeOf(child);
  return n;
}

export class FileWriter {
  constructor(
    private readonly fs: PodFilesystem,
    private readonly node: FileNode,
    private readonly path: string,
  ) {}

  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.fs.reserve(chunk.length, this.path);
    // Copy: the chunk may be a view into a transport buffer that gets reused.
    this.node.chunks.push(Buffer.from(chunk));
    this.node.size += chunk.length;
    this.node.mtime = new Date();
  }
}

/** The files a fresh container starts with. */
export function newContainerFilesystem(hostname: string, limitBytes?: number): PodFilesystem {
  const fs = new PodFilesystem(limitBytes);
  for (const dir of ['/bin', '/etc', '/home', '/root', '/tmp', '/var', '/var/log']) fs.mkdir(dir);
  fs.writeFile('/etc/hostname', `${hostname}\n`);
  fs.writeFile('/etc/hosts', `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n`);
  return fs;
}
