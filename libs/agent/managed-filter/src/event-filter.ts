import type { ByteSource, FilterOptions } from './byte-source.js';
import { filterCollection } from './collection-filter.js';
import { eventVerdict } from './event-visibility.js';
import type { ManagedCheck } from './managed-resolver.js';
import { filterWatchStream, type WatchFilterOptions } from './watch-filter.js';

/**
 * Filters core/v1 or events.k8s.io Events (a List, a Table with full row objects, or a
 * watch stream) to those whose involvedObject / regarding is managed.
 */
export function filterEvents(
  source: ByteSource,
  resolver: ManagedCheck,
  mode: 'list' | 'watch' = 'list',
  opts?: FilterOptions & WatchFilterOptions,
): AsyncGenerator<Buffer, void, undefined> {
  return mode === 'watch'
    ? filterWatchStream(source, resolver, eventVerdict, opts)
    : filterCollection(source, resolver, eventVerdict, opts);
}
