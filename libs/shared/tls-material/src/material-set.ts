import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { observeMaterials } from './material-metrics.js';
import { type Material, type MaterialSpec, openMaterial, SecretStore } from './material-source.js';

/** Where a service's material is opened from, while it is being opened. */
export interface MaterialSet {
  /**
   * Secret `name` of the set's namespace for a spec's `secret` (`option` names it in messages;
   * `keys` for a CA bundle), or undefined when no Kubernetes API is used: files only.
   */
  secret(
    name: string,
    option: string,
    keys?: readonly string[],
  ): { store: SecretStore; name: string; option: string; keys?: readonly string[] } | undefined;
  /** Opens one piece (files win, Secrets are watched), kept for `reload` and `stop`. */
  open<T>(spec: MaterialSpec<T>): Promise<Material<T>>;
}

/** What every service's material does together. */
export interface OpenedMaterials {
  /** Reads every file and Secret again (SIGHUP, a config-reload event). */
  reload(): Promise<void>;
  /** Publishes the expiry, load time and reload failures of every piece, labelled `service`. */
  observe(registry: Registry, service: string): void;
  stop(): void;
}

/**
 * Opens a service's certificates, CAs and keys with `open`: each from its files, or from a
 * Secret of `namespace` read through `kubeConfig` (none: files only), all reloaded and stopped
 * together. When one cannot be opened, those opened before it and the Secret watches stop.
 */
export async function openMaterials<R extends object>(
  source: { kubeConfig: KubeConfig | undefined; namespace: string; logger: Logger },
  open: (set: MaterialSet) => Promise<R>,
): Promise<R & OpenedMaterials> {
  const store = source.kubeConfig
    ? new SecretStore(source.kubeConfig, source.namespace, source.logger)
    : undefined;
  const opened: Material<unknown>[] = [];
  const stop = () => {
    for (const m of opened) m.stop();
    store?.stop();
  };
  const set: MaterialSet = {
    secret: (name, option, keys) => (store ? { store, name, option, ...(keys ? { keys } : {}) } : undefined),
    async open(spec) {
      const m = await openMaterial(spec, source.logger);
      opened.push(m as Material<unknown>);
      return m;
    },
  };
  try {
    const result = await open(set);
    return Object.assign(result, {
      async reload() {
        await Promise.all(opened.map((m) => m.reload()));
      },
      observe(registry: Registry, service: string) {
        observeMaterials(
          opened.filter((m) => m.source !== 'none'),
          registry,
          service,
        );
      },
      stop,
    });
  } catch (err) {
    stop();
    throw err;
  }
}
