import type { ByteSource } from './byte-source.js';
import { filterList, filterTable } from './collection-filter.js';
import type { ForwardDecision } from './decide-request.js';
import { filterEvents } from './event-filter.js';
import type { ManagedCheck } from './managed-resolver.js';
import { filterWatch, type WatchFilterOptions } from './watch-filter.js';

export type ResponseFilter = (source: ByteSource) => AsyncGenerator<Buffer, void, undefined>;

/**
 * The filter a forwarded request's response body must go through, or undefined when it
 * passes as is. Apply it to 2xx JSON responses only (see isJsonContentType); error
 * responses are Status objects and carry no objects to hide.
 */
export function responseFilterFor(
  decision: ForwardDecision,
  resolver: ManagedCheck,
  opts?: WatchFilterOptions,
): ResponseFilter | undefined {
  switch (decision.filter) {
    case 'list':
      return (source) => filterList(source, resolver, opts);
    case 'table':
      return (source) => filterTable(source, resolver, opts);
    case 'watch':
      return (source) => filterWatch(source, resolver, opts);
    case 'events':
      return (source) => filterEvents(source, resolver, decision.watch ? 'watch' : 'list', opts);
    case 'none':
      return undefined;
  }
}
