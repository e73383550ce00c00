import { type Bus, onConfigReload } from '@pullplane/bus';
import {
  currentListenerTls,
  followListenerMaterial,
  type ListenerMaterial,
  type ListenerTls,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { HttpFront } from './http-front.js';

export interface ServeFrontOptions {
  /** The service whose config-reload requests on the bus re-read the material. */
  service: string;
  bus: Bus;
  logger: Logger;
  /** The listener's certificate and callers' CA, followed while the front runs. */
  listener: ListenerMaterial;
  /** TLS versions and suites of the listener. */
  protocol?: ListenerTls['protocol'] | undefined;
  /** Stops what the service opened for this front (revocations, material) as it closes. */
  stop: () => void;
}

/** A front as its replica runs it, and the reload SIGHUP calls. */
export interface ServedFront {
  front: HttpFront;
  /** Re-reads the listener's material now and applies it. */
  reload(): Promise<void>;
}

/**
 * Creates a proxy's front with its listener's material as it stands (plaintext without a
 * certificate), then keeps that material current: rotations, reload requests on the bus, and
 * `reload`. Closing the front stops the following and `stop` before the drain.
 */
export function serveFront(
  create: (tls: ListenerTls | undefined) => HttpFront,
  o: ServeFrontOptions,
): ServedFront {
  const tls = currentListenerTls(o.listener);
  const front = create(tls ? { ...tls, ...(o.protocol ? { protocol: o.protocol } : {}) } : undefined);
  const followed = followListenerMaterial(o.listener, {
    logger: o.logger,
    reloadOn: (request) => onConfigReload(o.bus, o.service, request),
    apply: (material) => front.reloadTls(material),
  });
  return {
    front: {
      get port() {
        return front.port;
      },
      listen: () => front.listen(),
      reloadTls: (material) => front.reloadTls(material),
      async close(graceMs?: number) {
        followed.stop();
        o.stop();
        await front.close(graceMs);
      },
    },
    reload: followed.reload,
  };
}
