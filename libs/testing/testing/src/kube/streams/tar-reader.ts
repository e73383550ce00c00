import { BLOCK, decodeHeader, parsePax, TarFormatError, type TarHeader } from './tar-format.js';

export interface TarReaderHandlers {
  /** A new entry (PAX and GNU long-name entries already applied). */
  entry(header: TarHeader): void;
  /** A piece of the current entry's data (regular files only). */
  data(chunk: Buffer): void;
  /** The current entry is complete. */
  end(): void;
}

type State = 'header' | 'meta' | 'data' | 'skip' | 'done';

/**
 * Incremental tar parser: push() any split of the archive; entries come out through the handlers
 * with their data streamed, never buffered whole. Metadata entries (PAX, GNU long names) are
 * limited to `maxMetaBytes`. Ends at the first zero block; bytes after it are ignored.
 */
export class TarReader {
  private state: State = 'header';
  private block = Buffer.alloc(BLOCK);
  private fill = 0;
  /** Data bytes left in the current entry, then padding bytes to skip. */
  private left = 0;
  private pad = 0;
  private meta: Buffer[] = [];
  private metaType = '';
  private pax = new Map<string, string>();
  private longName: string | undefined;
  private longLink: string | undefined;
  private fileOpen = false;

  constructor(
    private readonly handlers: TarReaderHandlers,
    private readonly maxMetaBytes = 1024 * 1024,
  ) {}

  get done(): boolean {
    return this.state === 'done';
  }

  /** True when the archive ended in the middle of an entry or header. */
  get truncated(): boolean {
    return this.state !== 'done' && (this.fill > 0 || this.state !== 'header');
  }

  push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length && this.state !== 'done') {
      if (this.state === 'header') {
        const n = Math.min(BLOCK - this.fill, chunk.length - off);
        chunk.copy(this.block, this.fill, off, off + n);
        this.fill += n;
        off += n;
        if (this.fill === BLOCK) {
          this.fill = 0;
          this.onHeader();
        }
        continue;
      }
      if (this.left > 0) {
        const n = Math.min(this.left, chunk.length - off);
        const piece = chunk.subarray(off, off + n);
        off += n;
        this.left -= n;
        if (this.state === 'data') this.handlers.data(piece);
        else if (this.state === 'meta') this.meta.push(Buffer.from(piece));
        if (this.left > 0) continue;
      }
      const n = Math.min(this.pad, chunk.length - off);
      this.pad -= n;
      off += n;
      if (this.pad === 0) this.entryDone();
    }
  }

  private onHeader(): void {
    const raw = decodeHeader(this.block);
    if (!raw) {
      this.state = 'done';
      return;
    }
    const { typeflag, header } = raw;
    const size = header.size;
    this.left = size;
    this.pad = (BLOCK - (size % BLOCK)) % BLOCK;
    if (typeflag === 'x' || typeflag === 'g' || typeflag === 'L' || typeflag === 'K') {
      if (size > this.maxMetaBytes)
        throw new TarFormatError(`tar metadata entry of ${size} bytes is too large`);
      this.metaType = typeflag;
      this.meta = [];
      this.state = 'meta';
    } else {
      this.applyOverrides(header);
      this.handlers.entry(header);
      this.fileOpen = true;
      this.state = header.type === 'file' ? 'data' : 'skip';
      if (header.type !== 'file') {
        // Only regular files carry data; anything else is skipped with its padding.
        this.pad += this.left;
        this.left = 0;
      }
    }
    if (this.left === 0 && this.pad === 0) this.entryDone();
  }

  private applyOverrides(header: TarHeader): void {
    const path = this.pax.get('path') ?? this.longName;
    const link = this.pax.get('linkpath') ?? this.longLink;
    const size = this.pax.get('size');
    if (path !== undefined) header.name = path;
    if (link !== undefined) header.linkname = link;
    if (size !== undefined) {
      const n = Number(size);
      if (!Number.isSafeInteger(n) || n < 0)
        throw new TarFormatError(`invalid PAX size ${JSON.stringify(size)}`);
      header.size = n;
      this.left = n;
      this.pad = (BLOCK - (n % BLOCK)) % BLOCK;
    }
    this.pax = new Map();
    this.longName = undefined;
    this.longLink = undefined;
  }

  private entryDone(): void {
    if (this.state === 'meta') {
      const data = Buffer.concat(this.meta);
      this.meta = [];
      const text = () => {
        const nul = data.indexOf(0);
        return data.toString('utf8', 0, nul < 0 ? data.length : nul);
      };
      if (this.metaType === 'x') for (const [k, v] of parsePax(data)) this.pax.set(k, v);
      else if (this.metaType === 'L') this.longName = text();
      else if (this.metaType === 'K') this.longLink = text();
      // 'g' (global PAX headers) would apply to every later entry; nothing Kubernetes sends uses them.
    } else if (this.fileOpen) {
      this.fileOpen = false;
      this.handlers.end();
    }
    this.state = 'header';
  }
}
