import { EventEmitter } from 'node:events';
import type { CoreV1Api, KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { clientNode, clientNodeLoaded } from './client-node.js';

/** A Secret's data, decoded; undefined while the Secret does not exist. */
export type SecretData = Readonly<Record<string, Buffer>> | undefined;

export interface SecretWatchOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  logger: Logger;
  /** Reconnect backoff after a failed or ended watch (ms). Defaults 500 and 30 000. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

export interface SecretWatchEvents {
  /** The data changed (or the Secret appeared or disappeared). */
  change: [SecretData];
}

/** The HTTP status of a failed Kubernetes API call, if it was one. */
export const apiStatus = (err: unknown) =>
  clientNodeLoaded() && err instanceof clientNode().ApiException ? Number(err.code) : undefined;

/**
 * Follows one Secret: a list (fieldSelector metadata.name, so `list`/`watch` RBAC can be
 * limited with resourceNames) for the current data and resourceVersion, then a watch from
 * there. A watch that ends or fails is resumed from the last resourceVersion seen; an expired
 * one (410) is re-listed. `change` fires only when the data actually differs.
 */
export class SecretWatch extends EventEmitter<SecretWatchEvents> {
  private data: SecretData;
  private fingerprint = '';
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private started = false;
  private failures = 0;
  private readonly api: CoreV1Api;
  private readonly log: Logger;

  constructor(private readonly opts: SecretWatchOptions) {
    super();
    this.api = opts.kubeConfig.makeApiClient(clientNode().CoreV1Api);
    this.log = opts.logger.child({ secret: `${opts.namespace}/${opts.name}` });
  }

  get current(): SecretData {
    return this.data;
  }

  get description(): string {
    return `Secret ${this.opts.namespace}/${this.opts.name}`;
  }

  /**
   * Reads the Secret once (absent is fine: `current` stays undefined) and starts watching.
   * @throws when the API refuses (forbidden, unreachable): the caller decides whether that is fatal.
   */
  async start(): Promise<SecretData> {
    this.stopped = false;
    await this.relist();
    this.started = true;
    void this.watch();
    return this.data;
  }

  /** Reads the Secret again now (SIGHUP, config-reload) and emits `change` if it differs. */
  async refresh(): Promise<SecretData> {
    await this.relist();
    return this.data;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort?.abort();
  }

  private async relist(): Promise<void> {
    const list = await this.api.listNamespacedSecret({
      namespace: this.opts.namespace,
      fieldSelector: `metadata.name=${this.opts.name}`,
    });
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    this.apply(list.items[0]);
  }

  private apply(secret: V1Secret | undefined): void {
    const data = secret ? decode(secret) : undefined;
    const fingerprint = data
      ? JSON.stringify(
          Object.entries(data)
            .map(([k, v]) => [k, v.toString('base64')])
            .sort(),
        )
      : '';
    if (fingerprint === this.fingerprint && (data === undefined) === (this.data === undefined)) return;
    this.fingerprint = fingerprint;
    this.data = data;
    if (this.started) {
      this.log.info({ present: data !== undefined }, 'secret changed');
      this.emit('change', data);
    }
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const w = new (clientNode().Watch)(this.opts.kubeConfig);
    let expired = false;
    try {
      const abort = await w.watch(
        `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace)}/secrets`,
        {
          fieldSelector: `metadata.name=${this.opts.name}`,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
        },
        (phase, obj: V1Secret & { code?: number }) => {
          this.failures = 0;
          if (phase === 'ERROR') {
            expired = obj.code === 410;
            return;
          }
          const rv = obj.metadata?.resourceVersion;
          if (rv) this.resourceVersion = rv;
          if (phase === 'ADDED' || phase === 'MODIFIED') this.apply(obj);
          else if (phase === 'DELETED') this.apply(undefined);
        },
        (err: unknown) => this.resume(err, expired),
      );
      this.abort = abort;
      // Stopped while the watch was being opened: it must not outlive the stop.
      if (this.stopped) abort.abort();
    } catch (err) {
      this.resume(err, false);
    }
  }

  /** After a watch ended: resume (or re-list when expired or failing) with backoff. */
  private resume(err: unknown, expired: boolean): void {
    if (this.stopped) return;
    const failed = err !== null && err !== undefined && !isAbort(err);
    if (failed) this.failures++;
    const initial = this.opts.backoffInitialMs ?? 500;
    const delay = failed ? Math.min(this.opts.backoffMaxMs ?? 30_000, initial * 2 ** (this.failures - 1)) : 0;
    if (failed) this.log.warn({ err: String(err), retryInMs: delay }, 'secret watch failed; resuming');
    this.timer = setTimeout(() => {
      void (async () => {
        if (this.stopped) return;
        if (expired || failed) {
          try {
            await this.relist();
          } catch (e) {
            this.resume(e, true);
            return;
          }
        }
        void this.watch();
      })();
    }, delay);
    this.timer.unref();
  }
}

function decode(secret: V1Secret): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64');
  for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] ??= Buffer.from(v);
  return out;
}

function isAbort(err: unknown): boolean {
  return (err as { name?: string })?.name === 'AbortError';
}
