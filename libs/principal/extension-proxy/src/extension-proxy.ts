import type { Tracer } from '@opentelemetry/api';
import type { OpenExchanges } from '@pullplane/auth';
import { createHttpFront, type HttpFront, type StreamOpener } from '@pullplane/http-front';
import type { ListenerTls } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CallerAuthOptions } from './caller.js';
import { extensionProxyMetrics } from './extension-metrics.js';
import { extensionRoute } from './extension-route.js';

/** The listener's TLS: see listenerSecureContext. */
export type ExtensionProxyTls = ListenerTls;

export interface ExtensionProxyOptions {
  router: StreamOpener;
  logger: Logger;
  registry: Registry;
  host: string;
  port: number;
  tls?: ExtensionProxyTls;
  auth: CallerAuthOptions;
  /** Resource proxy URLs cluster registration uses: `Argocd-Target-Cluster-URL` is matched against them. */
  clusterUrlBases: readonly string[];
  /** Time allowed until the response head (or the 101) arrives. */
  requestTimeoutMs: number;
  maxRequestBodyBytes: number;
  /** Revoked agents are unreachable. */
  isRevoked?: (agent: string) => boolean;
  /** Agents known to presence get their own metric series; others share `_unknown`. */
  isKnownAgent?: (agent: string) => boolean;
  /** Set when traces are exported: one server span per request, parent of the relay's and the agent's. */
  tracer?: Tracer | undefined;
  /** Where open requests are kept by token and agent, so a revocation ends them (WebSockets too). */
  openExchanges?: OpenExchanges;
}

export type ExtensionProxy = HttpFront;

/**
 * The extension proxy: Argo CD's API server calls it as the backend of every proxy extension;
 * it checks that the caller is the Argo CD server, picks the agent from Argo CD's target
 * headers, and streams the request through that agent's tunnel, where the agent alone decides
 * which in-cluster URL the extension name means.
 */
export function createExtensionProxy(opts: ExtensionProxyOptions): ExtensionProxy {
  const metrics = extensionProxyMetrics(opts.registry, opts.logger, opts.isKnownAgent ?? (() => true));
  const route = extensionRoute({
    auth: opts.auth,
    clusterUrlBases: opts.clusterUrlBases,
    isRevoked: opts.isRevoked,
    metrics,
  });
  return createHttpFront(route, opts);
}
