import {
  DEFAULT_TRACKING,
  fromArgoCdConfigMap,
  ManagedResolver,
  type ObjectRef,
  type TrackingConfig,
} from '@pullplane/managed-filter';
import type { Logger } from 'pino';
import type { KubeClient } from './kube-client.js';

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/**
 * Decides what the resource proxy may see on this cluster: the Argo CD tracking settings
 * (from `argocd-cm`, refreshed periodically) and an owner-chain resolver whose lookups are
 * plain GETs, with kinds mapped to resources through cached discovery.
 */
export class ManagedGate {
  readonly resolver: ManagedResolver;
  private readonly kinds = new Map<string, { at: number; resources: Map<string, ApiResource> }>();
  private trackingTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kube: KubeClient,
    private readonly opts: { argocdNamespace: string; logger: Logger; trackingRefreshMs?: number },
  ) {
    this.resolver = new ManagedResolver({
      getObject: (ref) => this.getObject(ref),
      tracking: DEFAULT_TRACKING,
      onLookupError: (ref: ObjectRef, err: unknown) =>
        opts.logger.warn({ ref, err: String(err) }, 'owner lookup failed; treating the object as unmanaged'),
    });
  }

  async start(): Promise<void> {
    await this.refreshTracking();
    this.trackingTimer = setInterval(
      () => void this.refreshTracking(),
      this.opts.trackingRefreshMs ?? 60_000,
    );
    this.trackingTimer.unref();
  }

  stop(): void {
    clearInterval(this.trackingTimer);
  }

  async refreshTracking(): Promise<TrackingConfig> {
    try {
      const cm = await this.kube.getJson(
        `/api/v1/namespaces/${this.opts.argocdNamespace}/configmaps/argocd-cm`,
      );
      const tracking = cm ? fromArgoCdConfigMap(cm) : DEFAULT_TRACKING;
      this.resolver.setTracking(tracking);
      return tracking;
    } catch (err) {
      this.opts.logger.warn(
        { err: String(err) },
        'could not read argocd-cm; keeping the current tracking method',
      );
      return this.resolver.tracking;
    }
  }

  private async getObject(ref: ObjectRef): Promise<unknown> {
    const [group, version] = ref.apiVersion.includes('/')
      ? ref.apiVersion.split('/', 2)
      : ['', ref.apiVersion];
    const resource = await this.resourceFor(group!, version!, ref.kind);
    if (!resource) return undefined;
    const root = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const ns = resource.namespaced && ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
    return this.kube.getJson(`${root}${ns}/${resource.name}/${encodeURIComponent(ref.name)}`);
  }

  private async resourceFor(group: string, version: string, kind: string): Promise<ApiResource | undefined> {
    const gv = group ? `${group}/${version}` : version;
    let entry = this.kinds.get(gv);
    if (!entry || Date.now() - entry.at > 600_000 || !entry.resources.has(kind)) {
      const list = (await this.kube.getJson(group ? `/apis/${group}/${version}` : `/api/${version}`)) as
        | { resources?: Array<{ name: string; kind: string; namespaced: boolean }> }
        | undefined;
      const resources = new Map<string, ApiResource>();
      for (const r of list?.resources ?? []) {
        if (!r.name.includes('/'))
          resources.set(r.kind, { name: r.name, kind: r.kind, namespaced: r.namespaced });
      }
      entry = { at: Date.now(), resources };
      this.kinds.set(gv, entry);
    }
    return entry.resources.get(kind);
  }
}
