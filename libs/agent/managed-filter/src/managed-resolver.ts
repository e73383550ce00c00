import { DEFAULT_TRACKING, isTracked, type TrackingConfig } from './tracking.js';
import { TtlLru } from './ttl-lru.js';

/**
 * `managed`: tracked itself or through an owner within the depth limit.
 * `unmanaged`: every path was followed to its end (or the depth limit) without tracking.
 * `unknown`: not proven managed, and some owner could not be read (missing, forbidden, error).
 * Only `managed` is ever shown; `unknown` lets a watch tell a deleted orphan from a stranger.
 */
export type ManagedVerdict = 'managed' | 'unmanaged' | 'unknown';

/** Identifies an object to GET: an ownerReference or an Event's involvedObject. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  /**
   * The dependent's namespace for ownerReferences (owners are namespace-local or cluster-scoped;
   * the reference does not say which, so getObject must ignore it for cluster-scoped kinds).
   */
  namespace?: string | undefined;
  uid?: string;
}

/** Reads one object from the cluster; resolves undefined when it does not exist. */
export type GetObject = (ref: ObjectRef) => Promise<unknown>;

/** What the request decision and the response filters need to know about visibility. */
export interface ManagedCheck {
  isTracked(obj: unknown): boolean;
  resolve(obj: unknown): Promise<ManagedVerdict>;
  resolveRef(ref: ObjectRef): Promise<ManagedVerdict>;
  /** A view with its own per-request cache; filters call it once per response. */
  forRequest?(): ManagedCheck;
}

export interface ManagedResolverOptions {
  getObject: GetObject;
  tracking?: TrackingConfig;
  /** Owner hops followed above the object (default 5). */
  maxDepth?: number;
  /** Shared cache across requests (default 10 000 entries, 5 s TTL). */
  cacheSize?: number;
  cacheTtlMs?: number;
  /** Per-request cache bound (default 2 000 entries). */
  requestCacheSize?: number;
  /** Bound on GETs for a single object's walk, against fan-out through many ownerReferences (default 64). */
  maxLookupsPerObject?: number;
  now?: () => number;
  onLookupError?: (ref: ObjectRef, err: unknown) => void;
}

/** What the walk needs from an owner; whole objects (pod templates...) are not kept. */
interface OwnerInfo {
  uid: string | undefined;
  tracked: boolean;
  owners: ObjectRef[];
  /** Some ownerReference was unusable (missing fields). */
  badOwner: boolean;
}
type Lookup = OwnerInfo | null | 'error';

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function refKey(ref: ObjectRef): string {
  return `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}|${ref.name}`;
}

function ownersOf(
  meta: Record<string, unknown>,
  namespace: string | undefined,
): { refs: ObjectRef[]; bad: boolean } {
  const list = meta.ownerReferences;
  if (!Array.isArray(list)) return { refs: [], bad: false };
  const refs: ObjectRef[] = [];
  let bad = false;
  for (const raw of list) {
    const o = record(raw);
    const apiVersion = str(o?.apiVersion);
    const kind = str(o?.kind);
    const name = str(o?.name);
    if (!apiVersion || !kind || !name) {
      bad = true;
      continue;
    }
    const ref: ObjectRef = { apiVersion, kind, name };
    if (namespace !== undefined) ref.namespace = namespace;
    const uid = str(o?.uid);
    if (uid !== undefined) ref.uid = uid;
    refs.push(ref);
  }
  return { refs, bad };
}

type Scope = Map<string, Promise<Lookup>>;

/**
 * Decides whether objects are managed by Argo CD: tracked themselves, or owned (transitively,
 * up to maxDepth hops) by something tracked. Owner GETs are deduplicated in flight, kept per
 * request, and shared across requests for a short TTL, so listing 500 pods of 5 ReplicaSets
 * costs one GET per distinct owner rather than one per pod.
 */
export class ManagedResolver implements ManagedCheck {
  private trackingConfig: TrackingConfig;
  private readonly getObject: GetObject;
  private readonly maxDepth: number;
  private readonly requestCacheSize: number;
  private readonly maxLookups: number;
  private readonly onLookupError: ((ref: ObjectRef, err: unknown) => void) | undefined;
  private readonly shared: TtlLru<string, OwnerInfo | null>;
  private readonly inflight = new Map<string, Promise<Lookup>>();
  // Lookups started before clear() must not repopulate the cache with stale answers.
  private generation = 0;

  constructor(opts: ManagedResolverOptions) {
    this.getObject = opts.getObject;
    this.trackingConfig = opts.tracking ?? { ...DEFAULT_TRACKING };
    this.maxDepth = opts.maxDepth ?? 5;
    this.requestCacheSize = opts.requestCacheSize ?? 2000;
    this.maxLookups = opts.maxLookupsPerObject ?? 64;
    this.onLookupError = opts.onLookupError;
    this.shared = new TtlLru(opts.cacheSize ?? 10_000, opts.cacheTtlMs ?? 5000, opts.now);
  }

  get tracking(): TrackingConfig {
    return this.trackingConfig;
  }

  /** Switches tracking (argocd-cm changed); cached owner verdicts depend on it, so they are dropped. */
  setTracking(tracking: TrackingConfig): void {
    this.trackingConfig = tracking;
    this.clear();
  }

  clear(): void {
    this.generation++;
    this.shared.clear();
    this.inflight.clear();
  }

  isTracked(obj: unknown): boolean {
    return isTracked(obj, this.trackingConfig);
  }

  async isManaged(obj: unknown): Promise<boolean> {
    return (await this.resolve(obj)) === 'managed';
  }

  resolve(obj: unknown): Promise<ManagedVerdict> {
    return this.resolveIn(obj, undefined);
  }

  resolveRef(ref: ObjectRef): Promise<ManagedVerdict> {
    return this.resolveRefIn(ref, undefined);
  }

  forRequest(): ManagedCheck {
    const scope: Scope = new Map();
    return {
      isTracked: (obj) => this.isTracked(obj),
      resolve: (obj) => this.resolveIn(obj, scope),
      resolveRef: (ref) => this.resolveRefIn(ref, scope),
    };
  }

  private async resolveIn(obj: unknown, scope: Scope | undefined): Promise<ManagedVerdict> {
    const meta = record(record(obj)?.metadata);
    if (!meta) return 'unmanaged';
    if (isTracked(obj, this.trackingConfig)) return 'managed';
    const { refs, bad } = ownersOf(meta, str(meta.namespace));
    const visited = new Set<string>();
    const uid = str(meta.uid);
    if (uid !== undefined) visited.add(uid);
    return this.walk(refs, bad, visited, scope);
  }

  private async resolveRefIn(ref: ObjectRef, scope: Scope | undefined): Promise<ManagedVerdict> {
    const info = await this.lookup(ref, scope);
    if (info === null || info === 'error' || !sameUid(ref, info)) return 'unknown';
    if (info.tracked) return 'managed';
    return this.walk(info.owners, info.badOwner, new Set([ref.uid ?? refKey(ref)]), scope);
  }

  /** Breadth-first up the owner graph, one level per hop, stopping at maxDepth hops. */
  private async walk(
    first: ObjectRef[],
    firstBad: boolean,
    visited: Set<string>,
    scope: Scope | undefined,
  ): Promise<ManagedVerdict> {
    let unknown = firstBad;
    let frontier = first.filter((r) => {
      const k = r.uid ?? refKey(r);
      if (visited.has(k)) return false;
      visited.add(k);
      return true;
    });
    let spent = 0;
    for (let depth = 1; frontier.length > 0 && depth <= this.maxDepth; depth++) {
      if (spent + frontier.length > this.maxLookups) {
        frontier = frontier.slice(0, Math.max(0, this.maxLookups - spent));
        unknown = true;
      }
      spent += frontier.length;
      const results = await Promise.all(frontier.map((r) => this.lookup(r, scope)));
      const next: ObjectRef[] = [];
      for (let i = 0; i < frontier.length; i++) {
        const info = results[i]!;
        if (info === null || info === 'error' || !sameUid(frontier[i]!, info)) {
          unknown = true;
          continue;
        }
        if (info.tracked) return 'managed';
        if (info.badOwner) unknown = true;
        for (const o of info.owners) {
          const k = o.uid ?? refKey(o);
          if (visited.has(k)) continue; // cycles end here
          visited.add(k);
          next.push(o);
        }
      }
      frontier = next;
    }
    return unknown ? 'unknown' : 'unmanaged';
  }

  private lookup(ref: ObjectRef, scope: Scope | undefined): Promise<Lookup> {
    const key = refKey(ref);
    const scoped = scope?.get(key);
    if (scoped) return scoped;
    const cached = this.shared.get(key);
    const p =
      cached !== undefined ? Promise.resolve(cached) : (this.inflight.get(key) ?? this.fetch(key, ref));
    if (scope) {
      if (scope.size >= this.requestCacheSize) {
        const oldest = scope.keys().next();
        if (!oldest.done) scope.delete(oldest.value);
      }
      scope.set(key, p);
    }
    return p;
  }

  private fetch(key: string, ref: ObjectRef): Promise<Lookup> {
    const generation = this.generation;
    const p: Promise<Lookup> = Promise.resolve()
      .then(() => this.getObject(ref))
      .then(
        (obj) => {
          const info = toInfo(obj, ref.namespace, this.trackingConfig);
          if (generation === this.generation) this.shared.set(key, info);
          return info;
        },
        (err: unknown) => {
          // Failures are not cached across requests: the next request retries.
          this.onLookupError?.(ref, err);
          return 'error' as const;
        },
      )
      .finally(() => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
      });
    this.inflight.set(key, p);
    return p;
  }
}

function sameUid(ref: ObjectRef, info: OwnerInfo): boolean {
  // A recreated owner with the same name is a different object: it does not vouch for old dependents.
  return ref.uid === undefined || info.uid === undefined || ref.uid === info.uid;
}

function toInfo(obj: unknown, refNamespace: string | undefined, tracking: TrackingConfig): OwnerInfo | null {
  const meta = record(record(obj)?.metadata);
  if (!meta) return null;
  const { refs, bad } = ownersOf(meta, str(meta.namespace) ?? refNamespace);
  return { uid: str(meta.uid), tracked: isTracked(obj, tracking), owners: refs, badOwner: bad };
}
