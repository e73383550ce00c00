import type { Logger } from 'pino';
import type { ListenerTls } from './listener-tls.js';
import type { KeyPair } from './material-parsers.js';
import type { Material } from './material-source.js';

/** A listener's TLS material: its pair (absent: plaintext) and the CA of its clients. */
export interface ListenerMaterial {
  readonly pair: Material<KeyPair> | undefined;
  readonly clientCa: Material<Buffer> | undefined;
  /** Re-reads every file and Secret of the service. */
  reload(): Promise<void>;
}

export type RotatingTls = Pick<ListenerTls, 'cert' | 'key' | 'ca'>;

/** The pair and CA as they stand now, or undefined for a plaintext listener. */
export function currentListenerTls(m: ListenerMaterial): RotatingTls | undefined {
  const pair = m.pair?.current;
  if (!pair) return undefined;
  const ca = m.clientCa?.current;
  return { cert: pair.cert, key: pair.key, ...(ca ? { ca } : {}) };
}

export interface FollowedMaterial {
  /** Re-reads the material now and applies it (SIGHUP). */
  reload(): Promise<void>;
  stop(): void;
}

/**
 * Keeps a listener's certificate and client CA current: `apply` (new connections take them)
 * on a rotation of either, on each request `reloadOn` delivers (a config-reload event), and on
 * demand. Material the listener refuses is logged and the current one kept.
 */
export function followListenerMaterial(
  m: ListenerMaterial,
  opts: {
    apply: (tls: RotatingTls) => void;
    logger: Logger;
    /** Subscribes to reload requests; returns the unsubscriber. */
    reloadOn?: (reload: () => void) => () => void;
  },
): FollowedMaterial {
  const apply = () => {
    const tls = currentListenerTls(m);
    if (!tls) return;
    try {
      opts.apply(tls);
    } catch (err) {
      opts.logger.error({ err: String(err) }, 'could not apply TLS material; keeping the current one');
    }
  };
  m.pair?.onChange(apply);
  m.clientCa?.onChange(apply);
  const reload = async () => {
    await m.reload();
    apply();
  };
  const stop = opts.reloadOn?.(() => void reload()) ?? (() => {});
  return { reload, stop };
}
