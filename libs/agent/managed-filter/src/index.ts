export { isJsonContentType, negotiateAccept } from './accept.js';
export {
  type ByteSource,
  DEFAULT_FLUSH_BYTES,
  DEFAULT_MAX_ITEM_BYTES,
  type FilterOptions,
} from './byte-source.js';
export {
  filterCollection,
  filterList,
  filterTable,
  managedVerdict,
  rowObject,
  type VerdictOf,
} from './collection-filter.js';
export {
  ALLOWED_SUBRESOURCES,
  type DecideOptions,
  decideRequest,
  type FilterKind,
  type ForwardDecision,
  type RejectDecision,
  type RequestDecision,
} from './decide-request.js';
export {
  isManagedFilterError,
  ManagedFilterError,
  ManagedFilterErrorCode,
  ManagedFilterErrors,
} from './errors.js';
export { filterEvents } from './event-filter.js';
export { eventSubject, eventVerdict, isEventResource } from './event-visibility.js';
export { type KubeVerb, type ParsedKubePath, parseKubePath, type TargetRef, targetOf } from './kube-path.js';
export {
  type GetObject,
  type ManagedCheck,
  ManagedResolver,
  type ManagedResolverOptions,
  type ManagedVerdict,
  type ObjectRef,
  refKey,
} from './managed-resolver.js';
export { type ResponseFilter, responseFilterFor } from './response-filter.js';
export {
  type KubeStatus,
  NOT_MANAGED_MESSAGE,
  type StatusDetails,
  type StatusReason,
  statusFromError,
  statusObject,
} from './status.js';
export {
  DEFAULT_INSTANCE_LABEL_KEY,
  DEFAULT_TRACKING,
  fromArgoCdConfigMap,
  INSTALLATION_ID_ANNOTATION,
  isTracked,
  parseTrackingId,
  TRACKING_ID_ANNOTATION,
  type TrackingConfig,
  type TrackingId,
  type TrackingMethod,
} from './tracking.js';
export { TtlLru } from './ttl-lru.js';
export { filterWatch, filterWatchStream, type WatchFilterOptions } from './watch-filter.js';
