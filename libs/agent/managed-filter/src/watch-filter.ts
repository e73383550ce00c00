import { type ByteSource, DEFAULT_MAX_ITEM_BYTES, type FilterOptions, toBuffer } from './byte-source.js';
import { managedVerdict, rowObject, type VerdictOf } from './collection-filter.js';
import { ManagedFilterError, ManagedFilterErrorCode } from './errors.js';
import type { ManagedCheck } from './managed-resolver.js';

export interface WatchFilterOptions extends FilterOptions {
  /**
   * Forward a metadata-only DELETED for deletions whose ownership can no longer be proven
   * because an owner is already gone (cascading deletes remove owners first). Without it,
   * Argo CD would keep such pods forever. Costs: the name of a deleted orphan may be seen.
   * Default true.
   */
  orphanTombstones?: boolean;
  /** How many shown objects are remembered to report them as DELETED when they stop being managed. */
  maxRemembered?: number;
}

const NL = Buffer.from('\n');

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function malformed(message: string): never {
  throw new ManagedFilterError(ManagedFilterErrorCode.MALFORMED_RESPONSE, message);
}

function objectKey(obj: Record<string, unknown>): string | undefined {
  const meta = record(obj.metadata);
  if (!meta) return undefined;
  if (typeof meta.uid === 'string' && meta.uid !== '') return meta.uid;
  return typeof meta.name === 'string' ? `${String(meta.namespace ?? '')}/${meta.name}` : undefined;
}

/** A DELETED event that carries identity only, never the (no longer visible) content. */
function tombstone(obj: Record<string, unknown>): Buffer {
  const meta = record(obj.metadata) ?? {};
  const slim: Record<string, unknown> = {};
  for (const k of ['name', 'namespace', 'uid', 'resourceVersion'])
    if (meta[k] !== undefined) slim[k] = meta[k];
  const object = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: slim };
  return Buffer.from(`${JSON.stringify({ type: 'DELETED', object })}\n`, 'utf8');
}

function isBlank(b: Buffer): boolean {
  for (const c of b) if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false;
  return true;
}

function isTable(obj: Record<string, unknown>): boolean {
  return (
    obj.kind === 'Table' && typeof obj.apiVersion === 'string' && obj.apiVersion.startsWith('meta.k8s.io/')
  );
}

/**
 * Decides each watch event on its own. Kept events are re-emitted byte for byte; the
 * tunnel sees each one as soon as its line is complete.
 */
class WatchDecider {
  private readonly shown = new Set<string>();
  private pendingColumns: unknown;
  private columnsSent = false;

  constructor(
    private readonly check: ManagedCheck,
    private readonly verdictOf: VerdictOf,
    private readonly tombstones: boolean,
    private readonly maxRemembered: number,
  ) {}

  async decide(line: Buffer): Promise<Buffer | undefined> {
    let ev: Record<string, unknown> | undefined;
    try {
      ev = record(JSON.parse(line.toString('utf8')));
    } catch {
      malformed('invalid JSON in a watch event');
    }
    if (!ev || typeof ev.type !== 'string') malformed('watch event without a type');
    // Bookmarks carry only a resourceVersion; errors are Status objects: both always pass.
    if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return Buffer.concat([line, NL]);
    const obj = record(ev.object);
    if (!obj) malformed('watch event without an object');
    if (isTable(obj)) return this.decideTable(ev, obj, line);
    const verdict = await this.verdictOf(obj, this.check);
    const key = objectKey(obj);
    if (verdict === 'managed') {
      if (key !== undefined) {
        if (ev.type === 'DELETED') this.shown.delete(key);
        else this.remember(key);
      }
      return Buffer.concat([line, NL]);
    }
    if (key !== undefined && this.shown.delete(key)) {
      // It was shown and stopped being managed (or was deleted as such): the client must drop it.
      return tombstone(obj);
    }
    if (ev.type === 'DELETED' && verdict === 'unknown' && this.tombstones) return tombstone(obj);
    return undefined;
  }

  private remember(key: string): void {
    this.shown.delete(key);
    this.shown.add(key);
    if (this.shown.size > this.maxRemembered) {
      const oldest = this.shown.values().next();
      if (!oldest.done) this.shown.delete(oldest.value);
    }
  }

  /** `as=Table` watches (kubectl get -w): each event wraps rows; only the first carries columns. */
  private async decideTable(
    ev: Record<string, unknown>,
    table: Record<string, unknown>,
    line: Buffer,
  ): Promise<Buffer | undefined> {
    const rows: unknown[] = Array.isArray(table.rows) ? table.rows : [];
    const kept: unknown[] = [];
    for (const row of rows) {
      if ((await this.verdictOf(rowObject(row), this.check)) === 'managed') kept.push(row);
    }
    const cols = table.columnDefinitions;
    const hasCols = Array.isArray(cols) && cols.length > 0;
    if (kept.length === 0) {
      // Keep the headers of a dropped first event for the first event we do show.
      if (hasCols && !this.columnsSent) this.pendingColumns = cols;
      return undefined;
    }
    let changed = kept.length !== rows.length;
    if (!hasCols && this.pendingColumns !== undefined && !this.columnsSent) {
      table.columnDefinitions = this.pendingColumns;
      changed = true;
    }
    if (hasCols || changed) this.columnsSent = true;
    this.pendingColumns = undefined;
    if (!changed) return Buffer.concat([line, NL]);
    table.rows = kept;
    return Buffer.from(`${JSON.stringify(ev)}\n`, 'utf8');
  }
}

/**
 * Streams newline-delimited watch events, dropping events for objects that are not visible.
 * BOOKMARK and ERROR always pass. Each kept event is yielded as soon as its line is complete.
 */
export async function* filterWatchStream(
  source: ByteSource,
  resolver: ManagedCheck,
  verdictOf: VerdictOf = managedVerdict,
  opts: WatchFilterOptions = {},
): AsyncGenerator<Buffer, void, undefined> {
  // No per-request cache here: a watch outlives any sensible cache lifetime, so owner
  // answers come from the resolver's TTL cache and follow changes within its TTL.
  const decider = new WatchDecider(
    resolver,
    verdictOf,
    opts.orphanTombstones ?? true,
    opts.maxRemembered ?? 100_000,
  );
  const maxLine = opts.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
  let parts: Buffer[] = [];
  let partsLen = 0;
  const tooLarge = () =>
    new ManagedFilterError(ManagedFilterErrorCode.ITEM_TOO_LARGE, `watch event exceeds ${maxLine} bytes`);
  const finish = async (tail: Buffer): Promise<Buffer | undefined> => {
    const line = parts.length === 0 ? tail : Buffer.concat([...parts, tail], partsLen + tail.length);
    parts = [];
    partsLen = 0;
    if (line.length > maxLine) throw tooLarge();
    // Blank lines (or a stray CR) carry no event.
    if (isBlank(line)) return undefined;
    return decider.decide(line);
  };
  for await (const chunk of source) {
    const buf = toBuffer(chunk);
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(0x0a, start);
      if (nl < 0) {
        if (start < buf.length) {
          partsLen += buf.length - start;
          if (partsLen > maxLine) throw tooLarge();
          parts.push(buf.subarray(start));
        }
        break;
      }
      const out = await finish(buf.subarray(start, nl));
      start = nl + 1;
      if (out) yield out;
    }
  }
  if (partsLen > 0) {
    const out = await finish(Buffer.alloc(0));
    if (out) yield out;
  }
}

/** Filters a watch stream to events about managed objects. */
export function filterWatch(
  source: ByteSource,
  resolver: ManagedCheck,
  opts?: WatchFilterOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return filterWatchStream(source, resolver, managedVerdict, opts);
}
