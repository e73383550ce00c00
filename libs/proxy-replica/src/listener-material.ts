import type { Bus } from '@pullplane/bus';
import type { KeyPair, ListenerTls, Material } from '@pullplane/tls-material';

/** A replica's caller-facing TLS material: its pair (absent: plaintext) and the callers' CA. */
export interface ListenerMaterial {
  readonly pair: Material<KeyPair> | undefined;
  readonly clientCa: Material<Buffer> | undefined;
  /** Re-reads every file and Secret of the replica. */
  reload(): Promise<void>;
}

type RotatingTls = Pick<ListenerTls, 'cert' | 'key' | 'ca'>;

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
 * Keeps a listener's certificate and caller CA current: on rotation of either, on a
 * `config-reload` control event for `service` (or for every service), and on demand.
 */
export function followListenerMaterial(
  m: ListenerMaterial,
  opts: { bus: Bus; service: string; apply: (tls: RotatingTls) => void },
): FollowedMaterial {
  const apply = () => {
    const tls = currentListenerTls(m);
    if (tls) opts.apply(tls);
  };
  m.pair?.onChange(apply);
  m.clientCa?.onChange(apply);
  const reload = async () => {
    await m.reload();
    apply();
  };
  const stop = opts.bus.control.subscribe((ev) => {
    if (ev.type === 'config-reload' && (!ev.service || ev.service === opts.service)) void reload();
  });
  return { reload, stop };
}
