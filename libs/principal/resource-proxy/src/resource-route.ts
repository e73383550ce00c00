import type { IncomingMessage } from 'node:http';
import { forwardedHeaders, type ProxyRoute } from '@pullplane/http-front';
import { isStrippedResponseHeader } from '@pullplane/names';
import { type ProxyErrorName, RESOURCE_PROXY_FAILURES, resourceProxyAnswer } from './errors.js';
import { isStreaming, requestHeaderRule } from './request-headers.js';
import { type CallerAuthOptions, type ResolvedTarget, resolveTarget } from './request-target.js';
import type { ResourceProxyMetrics } from './resource-metrics.js';

const UNSUPPORTED_SUBRESOURCE = /\/pods\/[^/]+\/(exec|attach|portforward)(\?|$)/;

export interface ResourceRouteOptions {
  auth: CallerAuthOptions;
  /** Callers allowed to send Impersonate-* headers through (empty: stripped for all). */
  impersonators: readonly string[];
  metrics: ResourceProxyMetrics;
}

/**
 * What the resource proxy adds to the front: the caller and agent from the path, token,
 * certificate or mesh identity (`resolveTarget`); Kubernetes API requests as `http` streams;
 * watches and followed logs without a head deadline; no upgrades yet (exec, attach and
 * port-forward are refused).
 */
export function resourceRoute(o: ResourceRouteOptions): ProxyRoute<ResolvedTarget, ProxyErrorName> {
  const impersonators = new Set(o.impersonators);
  // The configured mesh identity header, whatever it is called, is the caller's identity.
  const meshHeader = o.auth.meshIdentity?.method.header.toLowerCase();
  return {
    proxy: 'resource',
    failures: RESOURCE_PROXY_FAILURES,
    answer: resourceProxyAnswer,
    screenUpgrade: () => ({ name: 'UNSUPPORTED' }),
    async accept(req: IncomingMessage) {
      const resolved = await resolveTarget(req, o.auth);
      if (!resolved.ok) return resolved;
      const target = resolved.target;
      o.metrics.request(target.agent);
      const strip = requestHeaderRule(meshHeader, impersonators.has(target.caller));
      return { ok: true, target, headers: forwardedHeaders(req, strip) };
    },
    admit(req, target) {
      // An Upgrade header without `Connection: upgrade` reaches here rather than screenUpgrade.
      if (UNSUPPORTED_SUBRESOURCE.test(target.path) || req.headers.upgrade) return { name: 'UNSUPPORTED' };
      return undefined;
    },
    head: (req, target, headers) => ({
      case: 'http',
      value: { method: req.method ?? 'GET', path: target.path, headers },
    }),
    streaming: (target) => isStreaming(target.path),
    flushHead: (target) => isStreaming(target.path),
    stripResponse: isStrippedResponseHeader,
    describe: (target) => ({ caller: target.caller }),
    headArrived: (req, _target, seconds) => o.metrics.headArrived(req, seconds),
    finished: (report) => o.metrics.finished(report),
  };
}
