import { type Bus, onConfigReload } from '@pullplane/bus';
import {
  currentListenerTls,
  followListenerMaterial,
  type KeyPair,
  type ListenerMaterial,
  type ListenerTls,
  type Material,
  type OpenedMaterials,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { CallerRevocations } from './caller-revocations.js';
import type { HttpFront } from './http-front.js';

/** What a proxy service opened for its front: the listener's pair and the callers' CA among it. */
export interface FrontMaterial extends OpenedMaterials {
  readonly serverTls: Material<KeyPair> | undefined;
  readonly clientCa: Material<Buffer> | undefined;
}

export interface ServeFrontOptions {
  /** The service whose config-reload requests on the bus re-read the material. */
  service: string;
  bus: Bus;
  logger: Logger;
  /** Followed while the front runs, stopped as it closes. */
  material: FrontMaterial;
  /** Stopped as the front closes. */
  revocations: Pick<CallerRevocations, 'stop'>;
  /** TLS versions and suites of the listener. */
  protocol?: ListenerTls['protocol'] | undefined;
}

/** A front as its replica runs it, and the reload SIGHUP calls. */
export interface ServedFront {
  front: HttpFront;
  /** Re-reads the service's material now and applies the listener's. */
  reload(): Promise<void>;
}

/**
 * Creates a proxy's front with its listener's material as it stands (plaintext without a
 * certificate), then keeps that material current: rotations, reload requests on the bus, and
 * `reload`. Closing the front stops the following, the revocations and the material before the
 * drain.
 */
export function serveFront(
  create: (tls: ListenerTls | undefined) => HttpFront,
  o: ServeFrontOptions,
): ServedFront {
  const { material } = o;
  const listener: ListenerMaterial = {
    pair: material.serverTls,
    clientCa: material.clientCa,
    reload: () => material.reload(),
  };
  const tls = currentListenerTls(listener);
  const front = create(tls ? { ...tls, ...(o.protocol ? { protocol: o.protocol } : {}) } : undefined);
  const followed = followListenerMaterial(listener, {
    logger: o.logger,
    reloadOn: (request) => onConfigReload(o.bus, o.service, request),
    apply: (next) => front.reloadTls(next),
  });
  return {
    front: {
      get port() {
        return front.port;
      },
      listen: () => front.listen(),
      reloadTls: (next) => front.reloadTls(next),
      async close(graceMs?: number) {
        followed.stop();
        o.revocations.stop();
        material.stop();
        await front.close(graceMs);
      },
    },
    reload: followed.reload,
  };
}
