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
import type { ExtensionRequest } from './target.js';

/** Distinct extension names given their own metric series; beyond, `_other`. */
const MAX_EXTENSION_LABELS = 200;

/** How the extension proxy counts and audits its exchanges. */
export interface ExtensionProxyMetrics {
  headArrived(target: ExtensionRequest, seconds: number): void;
  finished(report: ExchangeReport<ExtensionRequest>): void;
}

/**
 * `extension_proxy_*` by extension and agent (agents not in presence share `_unknown`, past
 * 200 extension names `_other`), and one audit line per request at info, with Argo CD's user,
 * groups, application and project.
 */
export function extensionProxyMetrics(
  registry: Registry,
  log: Logger,
  isKnownAgent: (agent: string) => boolean,
): ExtensionProxyMetrics {
  const requests = getOrCreateCounter(registry, {
    name: 'extension_proxy_requests_total',
    help: 'Proxy extension requests answered, by extension, agent and status code (101: upgraded).',
    labelNames: ['extension', 'agent', 'code'],
  });
  const errors = getOrCreateCounter(registry, {
    name: 'extension_proxy_errors_total',
    help: 'Proxy extension requests that failed at the proxy or on the way, by extension, agent and reason.',
    labelNames: ['extension', 'agent', 'reason'],
  });
  const duration = getOrCreateHistogram(registry, {
    name: 'extension_proxy_request_duration_seconds',
    help: 'Time to the response head through the tunnel, by extension and agent.',
    labelNames: ['extension', 'agent'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
  });
  const extensionLabels = new Set<string>();
  const labels = (t: Partial<ExtensionRequest> | undefined) => {
    let extension = t?.extension ?? '_none';
    if (t?.extension && !extensionLabels.has(extension)) {
      if (extensionLabels.size < MAX_EXTENSION_LABELS) extensionLabels.add(extension);
      else extension = '_other';
    }
    const agent = !t?.agent ? '_none' : isKnownAgent(t.agent) ? t.agent : '_unknown';
    return { extension, agent };
  };
  // Series resolved once per extension and agent label pair (both bounded above) and status.
  interface PairSeries {
    duration: HistogramSeries;
    byStatus: Map<number, CounterSeries>;
  }
  const pairs = new Map<string, Map<string, PairSeries>>();
  const seriesOf = (l: { extension: string; agent: string }): PairSeries => {
    let byAgent = pairs.get(l.extension);
    if (byAgent === undefined) {
      byAgent = new Map();
      pairs.set(l.extension, byAgent);
    }
    let s = byAgent.get(l.agent);
    if (s === undefined) {
      s = { duration: duration.series(l), byStatus: new Map() };
      byAgent.set(l.agent, s);
    }
    return s;
  };
  return {
    headArrived(target, seconds) {
      seriesOf(labels(target)).duration.observe(seconds);
    },
    finished(r) {
      const target = r.target;
      const l = labels(target);
      const s = seriesOf(l);
      let counted = s.byStatus.get(r.status);
      if (counted === undefined) {
        counted = counterSeries(requests, { ...l, code: String(r.status) });
        s.byStatus.set(r.status, counted);
      }
      counted.inc();
      // A caller that went away ended its own exchange: not a failure of the proxy or the agent.
      if (r.failure && !r.cancelled) errors.inc({ ...l, reason: r.failure });
      if (!log.isLevelEnabled('info')) return;
      const h = r.req.headers;
      log.info(
        {
          requestId: r.requestId,
          caller: target?.caller,
          via: target?.via,
          agent: target?.agent,
          extension: target?.extension,
          method: r.req.method,
          path: target?.path ?? r.req.url,
          status: r.status,
          durationMs: r.durationMs,
          argocd: {
            user: h['argocd-username'],
            groups: h['argocd-user-groups'],
            application: h['argocd-application-name'],
            project: h['argocd-project-name'],
          },
          bytesIn: r.bytesIn,
          bytesOut: r.bytesOut,
          ...(r.upgrade !== undefined ? { upgrade: r.upgrade } : {}),
          ...(r.error !== undefined ? { error: r.error } : {}),
          ...(r.failure !== undefined ? { failure: r.failure } : {}),
        },
        'extension request',
      );
    },
  };
}
