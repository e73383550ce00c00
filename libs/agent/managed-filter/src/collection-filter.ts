import {
  type ByteSource,
  DEFAULT_FLUSH_BYTES,
  DEFAULT_MAX_ITEM_BYTES,
  type FilterOptions,
  OutputBatch,
  toBuffer,
} from './byte-source.js';
import { ManagedFilterError, ManagedFilterErrorCode } from './errors.js';
import { TopLevelSplitter } from './json-splitter.js';
import type { ManagedCheck, ManagedVerdict } from './managed-resolver.js';

/** How one object's visibility is decided: managed-ness for most kinds, the subject for Events. */
export type VerdictOf = (obj: unknown, check: ManagedCheck) => Promise<ManagedVerdict>;

export const managedVerdict: VerdictOf = (obj, check) => check.resolve(obj);

// Both shapes are filtered whatever the caller expected, so a List arriving where a Table was
// expected (or the reverse) can never pass through unfiltered.
const FILTER_KEYS: ReadonlySet<string> = new Set(['items', 'rows']);
const CAPTURE_KEYS: ReadonlySet<string> = new Set(['metadata']);
const COMMA = Buffer.from(',');

function parseItem(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    throw new ManagedFilterError(ManagedFilterErrorCode.MALFORMED_RESPONSE, 'invalid JSON in a list element');
  }
}

/** A Table row is judged by its embedded object (PartialObjectMetadata or the full object). */
export function rowObject(row: unknown): unknown {
  return typeof row === 'object' && row !== null ? (row as { object?: unknown }).object : undefined;
}

/**
 * ListMeta.remainingItemCount counts objects the caller may not see; dropping it (it is
 * optional) avoids leaking how many unmanaged objects exist. continue/resourceVersion stay.
 */
function rewriteListMeta(b: Buffer): Buffer {
  const meta = parseItem(b);
  if (typeof meta !== 'object' || meta === null || !('remainingItemCount' in meta)) return b;
  delete (meta as { remainingItemCount?: unknown }).remainingItemCount;
  return Buffer.from(JSON.stringify(meta), 'utf8');
}

/**
 * Streams a JSON List or Table, keeping only the `items` / `rows` whose object is visible.
 * Memory stays at one element plus one input chunk; pages may come out shorter than `limit`.
 */
export async function* filterCollection(
  source: ByteSource,
  resolver: ManagedCheck,
  verdictOf: VerdictOf = managedVerdict,
  opts: FilterOptions = {},
): AsyncGenerator<Buffer, void, undefined> {
  const check = resolver.forRequest?.() ?? resolver;
  const flushBytes = opts.flushBytes ?? DEFAULT_FLUSH_BYTES;
  const splitter = new TopLevelSplitter({
    filterKeys: FILTER_KEYS,
    captureKeys: CAPTURE_KEYS,
    maxItemBytes: opts.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES,
  });
  const out = new OutputBatch();
  let kept = 0;
  for await (const chunk of source) {
    for (const tok of splitter.push(toBuffer(chunk))) {
      switch (tok.t) {
        case 'raw':
          out.push(tok.b);
          break;
        case 'arrayStart':
          kept = 0;
          break;
        case 'captured':
          out.push(rewriteListMeta(tok.b));
          break;
        case 'item': {
          const value = parseItem(tok.b);
          const obj = tok.key === 'rows' ? rowObject(value) : value;
          if ((await verdictOf(obj, check)) !== 'managed') break;
          if (kept++ > 0) out.push(COMMA);
          out.push(tok.b);
          break;
        }
      }
      if (out.size >= flushBytes) yield out.take();
    }
    if (out.size > 0) yield out.take();
  }
  splitter.end();
  if (out.size > 0) yield out.take();
}

/** Filters a `*List` response (`items`) to managed objects. */
export function filterList(
  source: ByteSource,
  resolver: ManagedCheck,
  opts?: FilterOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return filterCollection(source, resolver, managedVerdict, opts);
}

/** Filters a `meta.k8s.io/v1 Table` response (`rows[].object`) to managed objects. */
export function filterTable(
  source: ByteSource,
  resolver: ManagedCheck,
  opts?: FilterOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return filterCollection(source, resolver, managedVerdict, opts);
}
