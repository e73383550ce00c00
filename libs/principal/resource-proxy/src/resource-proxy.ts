import type { Tracer } from '@opentelemetry/api';
import type { OpenExchanges } from '@pullplane/auth';
import { createHttpFront, type HttpFront, type StreamOpener } from '@pullplane/http-front';
import type { ListenerTls } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CallerAuthOptions } from './request-target.js';
import { resourceProxyMetrics } from './resource-metrics.js';
import { resourceRoute } from './resource-route.js';

/** The listener's TLS: see listenerSecureContext. */
export type ResourceProxyTls = ListenerTls;

export interface ResourceProxyOptions {
  router: StreamOpener;
  logger: Logger;
  registry: Registry;
  host: string;
  port: number;
  /**
   * TLS for callers; client certificates are requested and verified against `ca` (without
   * one, no certificate is trusted: callers use tokens).
   */
  tls?: ResourceProxyTls;
  auth: CallerAuthOptions;
  /** Non-streaming requests fail with 504 when no response head arrives in time, and are cut when their body has not ended by then. */
  requestTimeoutMs: number;
  maxRequestBodyBytes: number;
  /** Callers allowed to send Impersonate-* headers through (empty: stripped for all). */
  impersonators?: readonly string[];
  /**
   * Agents known to presence: only they get their own `agent_name` series in argocd-agent's
   * metrics (others share `_unknown`, so made-up names cannot grow them). Default: all.
   */
  isKnownAgent?: (agent: string) => boolean;
  /** Set when traces are exported: one server span per request. */
  tracer?: Tracer | undefined;
  /** Where open requests are kept by token and agent, so a revocation ends them (watches too). */
  openExchanges?: OpenExchanges;
}

export type ResourceProxy = HttpFront;

/**
 * Looks like a Kubernetes API server to Argo CD and kubectl, and forwards each request
 * through the owning agent's tunnel. Bodies stream both ways; nothing is buffered whole.
 */
export function createResourceProxy(opts: ResourceProxyOptions): ResourceProxy {
  const metrics = resourceProxyMetrics(opts.registry, opts.logger, opts.isKnownAgent ?? (() => true));
  const route = resourceRoute({ auth: opts.auth, impersonators: opts.impersonators ?? [], metrics });
  return createHttpFront(route, opts);
}
