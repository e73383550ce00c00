import type { IncomingMessage } from 'node:http';
import type { ExchangeReport } from '@pullplane/http-front';
import {
  type CounterSeries,
  counterSeries,
  getOrCreateCounter,
  getOrCreateHistogram,
  type HistogramSeries,
} from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { argocdAgentResourceProxyMetrics } from './argocd-agent-metrics.js';
import type { ProxyErrorName } from './errors.js';
import type { ResolvedTarget } from './request-target.js';
import { sessionFields } from './session-audit.js';

/** How the resource proxy counts and audits its exchanges. */
export interface ResourceProxyMetrics {
  /** An authenticated caller's request for `agent`. */
  request(agent: string): void;
  headArrived(req: IncomingMessage, seconds: number): void;
  finished(report: ExchangeReport<ResolvedTarget>): void;
}

/**
 * `resource_proxy_*` and argocd-agent's `argocd_principal_resource_proxy_*` series, and one
 * audit line per request: at debug, except for refusals and failures, which stay at info (rare,
 * and what an operator investigates), and exec, attach and port-forward sessions, which are
 * always audited (who, which agent, pod, container and command, how long, bytes each way).
 */
export function resourceProxyMetrics(
  registry: Registry,
  log: Logger,
  isKnownAgent: (agent: string) => boolean,
): ResourceProxyMetrics {
  const requests = getOrCreateCounter(registry, {
    name: 'resource_proxy_requests_total',
    help: 'Requests answered by the resource proxy, by status code class and verb.',
    labelNames: ['code', 'method'],
  });
  const duration = getOrCreateHistogram(registry, {
    name: 'resource_proxy_request_duration_seconds',
    help: 'Time to the response head through the tunnel.',
    labelNames: ['method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  });
  const bytes = getOrCreateCounter(registry, {
    name: 'resource_proxy_body_bytes_total',
    help: 'Body bytes through the resource proxy: in (request bodies) and out (response bodies).',
    labelNames: ['direction'],
  });
  const bytesIn = counterSeries(bytes, { direction: 'in' });
  const bytesOut = counterSeries(bytes, { direction: 'out' });
  // Series resolved once per method (Node's parser admits only methods it knows, so few) and
  // status class: a request counts by additions.
  const byMethod = new Map<string, { duration: HistogramSeries; requests: CounterSeries[] }>();
  const seriesOf = (method: string) => {
    let s = byMethod.get(method);
    if (s === undefined) {
      const classes = ['1xx', '2xx', '3xx', '4xx', '5xx'];
      s = {
        duration: duration.series({ method }),
        requests: classes.map((code) => counterSeries(requests, { code, method })),
      };
      byMethod.set(method, s);
    }
    return s;
  };
  const compat = argocdAgentResourceProxyMetrics(registry, isKnownAgent);
  return {
    request: (agent) => compat.request(agent),
    headArrived(req, seconds) {
      seriesOf(req.method ?? '').duration.observe(seconds);
    },
    finished(r) {
      const { req, status, target } = r;
      const statusClass = Math.floor(status / 100);
      const byClass = seriesOf(req.method ?? '').requests[statusClass - 1];
      if (byClass) byClass.inc();
      else requests.inc({ code: `${statusClass}xx`, method: req.method ?? '' });
      if (r.bytesIn > 0) bytesIn.inc(r.bytesIn);
      if (r.bytesOut > 0) bytesOut.inc(r.bytesOut);
      // The agent's failures, as argocd-agent counts them; a caller that went away cancelled
      // the stream itself: not the agent's failure.
      if (r.accepted && target?.agent && r.failure && !r.cancelled)
        compat.failed(target.agent, r.failure as ProxyErrorName | 'MID_BODY');
      const session = r.upgrade !== undefined && target?.path ? sessionFields(target.path) : undefined;
      const level =
        session || status === 401 || status === 403 || status >= 500 || r.error ? 'info' : 'debug';
      if (!log.isLevelEnabled(level)) return;
      log[level](
        {
          ...session,
          requestId: r.requestId,
          ...r.trace,
          caller: target?.caller,
          via: target?.via,
          agent: target?.agent,
          verb: req.method,
          path: target?.path ?? req.url,
          status,
          bytesIn: r.bytesIn,
          bytesOut: r.bytesOut,
          durationMs: r.durationMs,
          ...(r.error !== undefined ? { error: r.error } : {}),
        },
        session ? `resource proxy ${session.session} session` : 'resource proxy request',
      );
    },
  };
}
