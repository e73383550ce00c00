/**
 * Tar headers: written in GNU format (what GNU tar writes by default: `ustar  ` magic, `L`/`K`
 * entries for long names), read in every format Go's archive/tar writes for `kubectl cp` (ustar
 * with the prefix field, PAX `x` records, GNU long names, base-256 sizes).
 */

export const BLOCK = 512;
/** GNU tar pads archives to its default record size (20 blocks). */
export const RECORD = 20 * BLOCK;

export type TarEntryType = 'file' | 'dir' | 'symlink' | 'hardlink' | 'other';

export interface TarHeader {
  name: string;
  type: TarEntryType;
  size: number;
  mode: number;
  mtime: Date;
  linkname: string;
}

export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TarFormatError';
  }
}

const TYPE_FLAGS: Record<string, TarEntryType> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '5': 'dir',
  '2': 'symlink',
  '1': 'hardlink',
};

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function putString(block: Buffer, offset: number, width: number, s: string): void {
  Buffer.from(s, 'utf8').copy(block, offset, 0, width);
}

/** One raw 512-byte header block. */
function rawHeader(
  name: string,
  typeflag: string,
  size: number,
  mode: number,
  mtime: Date,
  linkname: string,
): Buffer {
  const b = Buffer.alloc(BLOCK);
  putString(b, 0, 100, name);
  putString(b, 100, 8, octal(mode & 0o7777, 8));
  putString(b, 108, 8, octal(0, 8));
  putString(b, 116, 8, octal(0, 8));
  if (size < 8 ** 11) putString(b, 124, 12, octal(size, 12));
  else {
    // Base-256 for sizes beyond 8 GiB, as GNU tar does.
    b[124] = 0x80;
    b.writeBigUInt64BE(BigInt(size), 128);
  }
  putString(b, 136, 12, octal(Math.floor(mtime.getTime() / 1000), 12));
  b.fill(0x20, 148, 156);
  putString(b, 156, 1, typeflag);
  putString(b, 157, 100, linkname);
  putString(b, 257, 8, 'ustar  \0');
  putString(b, 265, 32, 'root');
  putString(b, 297, 32, 'root');
  let sum = 0;
  for (const byte of b) sum += byte;
  putString(b, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return b;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** A GNU `././@LongLink` entry carrying a name too long for its field. */
function longLink(typeflag: 'L' | 'K', value: string): Buffer[] {
  const data = Buffer.concat([Buffer.from(value, 'utf8'), Buffer.alloc(1)]);
  return [
    rawHeader('././@LongLink', typeflag, data.length, 0o644, new Date(0), ''),
    data,
    padding(data.length),
  ];
}

/** The header blocks of one entry (its data and padding are written by the caller). */
export function encodeHeader(h: TarHeader): Buffer {
  const parts: Buffer[] = [];
  const nameBytes = Buffer.byteLength(h.name);
  const linkBytes = Buffer.byteLength(h.linkname);
  if (nameBytes > 100) parts.push(...longLink('L', h.name));
  if (linkBytes > 100) parts.push(...longLink('K', h.linkname));
  const flag = { file: '0', dir: '5', symlink: '2', hardlink: '1', other: '0' }[h.type];
  parts.push(rawHeader(h.name, flag, h.type === 'file' ? h.size : 0, h.mode, h.mtime, h.linkname));
  return Buffer.concat(parts);
}

/** Zero padding after `size` bytes of entry data. */
export function dataPadding(size: number): Buffer {
  return padding(size);
}

/** The end-of-archive marker (two zero blocks) plus padding to a whole record. */
export function trailer(bytesSoFar: number): Buffer {
  const end = bytesSoFar + 2 * BLOCK;
  const rest = end % RECORD;
  return Buffer.alloc(2 * BLOCK + (rest === 0 ? 0 : RECORD - rest));
}

function cString(b: Buffer, offset: number, width: number): string {
  const field = b.subarray(offset, offset + width);
  const nul = field.indexOf(0);
  return field.subarray(0, nul < 0 ? width : nul).toString('utf8');
}

function numeric(b: Buffer, offset: number, width: number, what: string): number {
  if (b[offset]! & 0x80) {
    let v = 0n;
    for (let i = offset; i < offset + width; i++) v = (v << 8n) | BigInt(i === offset ? b[i]! & 0x7f : b[i]!);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new TarFormatError(`${what} out of range`);
    return Number(v);
  }
  const text = b
    .toString('latin1', offset, offset + width)
    .replace(/[\0 ]+$/, '')
    .replace(/^ +/, '');
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`invalid ${what} field ${JSON.stringify(text)}`);
  return Number.parseInt(text, 8);
}

export interface RawEntry {
  typeflag: string;
  header: TarHeader;
}

/** Parses one header block; undefined for an all-zero block (end of archive). */
export function decodeHeader(b: Buffer): RawEntry | undefined {
  if (b.every((byte) => byte === 0)) return undefined;
  const stored = numeric(b, 148, 8, 'checksum');
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : b[i]!;
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  if (stored !== unsigned && stored !== signed) throw new TarFormatError('header checksum mismatch');
  const typeflag = String.fromCharCode(b[156]!);
  let name = cString(b, 0, 100);
  const magic = b.toString('latin1', 257, 265);
  if (magic === 'ustar\x0000') {
    const prefix = cString(b, 345, 155);
    if (prefix !== '') name = `${prefix}/${name}`;
  }
  return {
    typeflag,
    header: {
      name,
      type: TYPE_FLAGS[typeflag] ?? 'other',
      size: numeric(b, 124, 12, 'size'),
      mode: numeric(b, 100, 8, 'mode'),
      mtime: new Date(numeric(b, 136, 12, 'mtime') * 1000),
      linkname: cString(b, 157, 100),
    },
  };
}

/** PAX extended header records: `<length> <key>=<value>\n` each. */
export function parsePax(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let off = 0;
  while (off < data.length) {
    const space = data.indexOf(0x20, off);
    if (space < 0) throw new TarFormatError('malformed PAX record');
    const len = Number(data.toString('latin1', off, space));
    if (
      !Number.isInteger(len) ||
      len <= space - off ||
      off + len > data.length ||
      data[off + len - 1] !== 0x0a
    ) {
      throw new TarFormatError('malformed PAX record');
    }
    const record = data.toString('utf8', space + 1, off + len - 1);
    const eq = record.indexOf('=');
    if (eq <= 0) throw new TarFormatError('malformed PAX record');
    out.set(record.slice(0, eq), record.slice(eq + 1));
    off += len;
  }
  return out;
}
