import type { IncomingMessage } from 'node:http';
import { forwardedHeaders, type ProxyRoute } from '@pullplane/http-front';
import { isStrippedResponseHeader } from '@pullplane/names';
import { type ProxyErrorName, RESOURCE_PROXY_FAILURES, resourceProxyAnswer } from './errors.js';
import { isStreaming, requestHeaderRule } from './request-headers.js';
import { type CallerAuthOptions, type ResolvedTarget, resolveTarget } from './request-target.js';
import type { ResourceProxyMetrics } from './resource-metrics.js';

const STREAM_SUBRESOURCE = /\/pods\/[^/?]+\/(exec|attach|portforward)(\?|$)/;

/** The upgrades the API server serves for exec, attach and port-forward. */
function streamUpgrade(req: IncomingMessage): boolean {
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  if (upgrade !== 'websocket' && !upgrade.split(',').some((p) => p.trim() === 'spdy/3.1')) return false;
  return STREAM_SUBRESOURCE.test((req.url ?? '').split('?', 1)[0]!);
}

export interface ResourceRouteOptions {
  auth: CallerAuthOptions;
  /** Callers allowed to send Impersonate-* headers through (empty: stripped for all). */
  impersonators: readonly string[];
  metrics: ResourceProxyMetrics;
}

/**
 * What the resource proxy adds to the front: the caller and agent from the path, token,
 * certificate or mesh identity (`resolveTarget`); Kubernetes API requests as `http` streams;
 * the request timeout bounds a watch's or a followed log's head, and every other answer
 * whole; exec, attach and port-forward as
 * upgrades (WebSocket or SPDY/3.1) that the agent performs against its API server, the
 * bytes after the 101 passed through raw. Other upgrades are refused before any credential
 * is looked at.
 */
export function resourceRoute(o: ResourceRouteOptions): ProxyRoute<ResolvedTarget, ProxyErrorName> {
  const impersonators = new Set(o.impersonators);
  // The configured mesh identity header, whatever it is called, is the caller's identity.
  const meshHeader = o.auth.meshIdentity?.method.header.toLowerCase();
  return {
    proxy: 'resource',
    failures: RESOURCE_PROXY_FAILURES,
    answer: resourceProxyAnswer,
    screenUpgrade: (req) => (streamUpgrade(req) ? undefined : { name: 'UNSUPPORTED' }),
    async accept(req: IncomingMessage) {
      const resolved = await resolveTarget(req, o.auth);
      if (!resolved.ok) return resolved;
      const target = resolved.target;
      o.metrics.request(target.agent);
      const strip = requestHeaderRule(meshHeader, impersonators.has(target.caller));
      return { ok: true, target, headers: forwardedHeaders(req, strip) };
    },
    admit(req, target) {
      // Reached by upgrades screenUpgrade let through, and by plain requests: exec, attach and
      // port-forward without an upgrade, or an Upgrade header without `Connection: upgrade`.
      const upgrading = req.headers.connection !== undefined && /\bupgrade\b/i.test(req.headers.connection);
      if (upgrading && streamUpgrade(req)) return undefined;
      if (STREAM_SUBRESOURCE.test(target.path) || req.headers.upgrade)
        return {
          name: 'UNSUPPORTED',
          detail: 'exec, attach and port-forward are requests that upgrade to WebSocket or SPDY/3.1',
        };
      return undefined;
    },
    head: (req, target, headers, upgrade) => ({
      case: 'http',
      value: { method: req.method ?? 'GET', path: target.path, headers, upgrade },
    }),
    flushHead: (target) => isStreaming(target.path),
    // As the API server's own request timeout: a GET or LIST whose body stalls is cut, not held.
    deadlineCoversBody: (target) => !isStreaming(target.path),
    stripResponse: isStrippedResponseHeader,
    describe: (target) => ({ caller: target.caller }),
    headArrived: (req, _target, seconds) => o.metrics.headArrived(req, seconds),
    finished: (report) => o.metrics.finished(report),
  };
}
