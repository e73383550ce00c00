import type { Tracer } from '@opentelemetry/api';
import type { OpenExchanges } from '@pullplane/auth';
import { getOrCreateCounter } from '@pullplane/telemetry';
import type { ListenerTls } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { forwardRequest } from './forward-request.js';
import { forwardUpgrade } from './forward-upgrade.js';
import type { FrontContext } from './front-context.js';
import { RESPONSE_FRAMING_METRIC } from './http-response.js';
import { createHttpServer, type HttpServer } from './http-server.js';
import type { FrontTarget, ProxyRoute } from './proxy-route.js';
import type { StreamOpener } from './stream-opener.js';

export interface HttpFrontOptions {
  router: StreamOpener;
  logger: Logger;
  registry: Registry;
  host: string;
  port: number;
  tls?: ListenerTls | undefined;
  /** Time allowed until the response head (or the 101) arrives; the Open carries it too. */
  requestTimeoutMs: number;
  /** Larger request bodies get the proxy's TOO_LARGE (declared, or counted as they stream). */
  maxRequestBodyBytes: number;
  /** Set when traces are exported: one server span per exchange, the parent of the agent's. */
  tracer?: Tracer | undefined;
  /** Where open exchanges are kept by token and agent, so a revocation ends them at once. */
  openExchanges?: OpenExchanges | undefined;
}

/** A proxy's HTTP front: a listener whose every request and upgrade goes through `route`. */
export type HttpFront = HttpServer;

/**
 * The HTTP front both proxies stand on (and exec, attach and port-forward next): one node:http
 * listener, each exchange forwarded through one stream of the agent's tunnel with the body
 * limit, deadline, revocation, honest framing, span and audit applied alike; the proxy's
 * `route` says only what differs.
 */
export function createHttpFront<T extends FrontTarget, N extends string>(
  route: ProxyRoute<T, N>,
  o: HttpFrontOptions,
): HttpFront {
  const ctx: FrontContext<T, N> = {
    route,
    router: o.router,
    logger: o.logger,
    tracer: o.tracer,
    openExchanges: o.openExchanges,
    requestTimeoutMs: o.requestTimeoutMs,
    maxRequestBodyBytes: o.maxRequestBodyBytes,
    framingErrors: getOrCreateCounter(o.registry, RESPONSE_FRAMING_METRIC),
  };
  return createHttpServer({
    name: `${route.proxy} proxy`,
    logger: o.logger,
    host: o.host,
    port: o.port,
    tls: o.tls,
    onRequest: (req, res) => {
      forwardRequest(ctx, req, res).catch(() => res.destroy());
    },
    onUpgrade: (req, socket, head) => {
      forwardUpgrade(ctx, req, socket, head).catch(() => socket.destroy());
    },
  });
}
