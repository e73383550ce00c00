import type { IncomingMessage } from 'node:http';
import { forwardedHeaders, type ProxyRoute } from '@pullplane/http-front';
import { isStrippedBackendResponseHeader, isStrippedExtensionRequestHeader } from '@pullplane/names';
import { type CallerAuthOptions, identifyCaller } from './caller.js';
import {
  EXTENSION_METHODS,
  EXTENSION_PROXY_FAILURES,
  type ExtensionProxyErrorName,
  extensionProxyAnswer,
} from './errors.js';
import type { ExtensionProxyMetrics } from './extension-metrics.js';
import { type ExtensionRequest, resolveExtensionTarget } from './target.js';

export interface ExtensionRouteOptions {
  auth: CallerAuthOptions;
  /** Resource proxy URLs cluster registration uses: `Argocd-Target-Cluster-URL` is matched against them. */
  clusterUrlBases: readonly string[];
  /** Revoked agents are unreachable. */
  isRevoked?: ((agent: string) => boolean) | undefined;
  metrics: ExtensionProxyMetrics;
}

/**
 * What the extension proxy adds to the front: only the methods Argo CD forwards, only the
 * Argo CD server as caller, the agent from Argo CD's target headers, `extension` streams (the
 * agent alone decides which in-cluster URL the name means), WebSocket upgrades, heads flushed
 * at once (event streams), and no cookie ever set on the Argo CD origin.
 */
export function extensionRoute(
  o: ExtensionRouteOptions,
): ProxyRoute<ExtensionRequest, ExtensionProxyErrorName> {
  // Hop-by-hop, credentials and identity of the hops in between, impersonation and request
  // rewriting never go on; nor the configured mesh identity header.
  const meshHeader = o.auth.meshIdentity?.header;
  const strip = (lower: string) => isStrippedExtensionRequestHeader(lower) || lower === meshHeader;
  return {
    proxy: 'extension',
    failures: EXTENSION_PROXY_FAILURES,
    answer: extensionProxyAnswer,
    // Only what Argo CD forwards: TRACE, WebDAV or cache-purge methods never reach a backend.
    screen: (req) =>
      EXTENSION_METHODS.has(req.method ?? '')
        ? undefined
        : { name: 'METHOD_NOT_ALLOWED', detail: `${String(req.method).slice(0, 32)} is not forwarded` },
    screenUpgrade(req) {
      // A WebSocket handshake is a GET (RFC 6455 §4.1); no other protocol is switched to.
      if (req.method !== 'GET')
        return { name: 'METHOD_NOT_ALLOWED', detail: `${String(req.method).slice(0, 32)} with Upgrade` };
      const protocol = String(req.headers.upgrade ?? '');
      if (protocol.toLowerCase() !== 'websocket')
        return { name: 'UNSUPPORTED_UPGRADE', detail: `Upgrade: ${protocol.slice(0, 64)}` };
      return undefined;
    },
    async accept(req: IncomingMessage) {
      const caller = await identifyCaller(req, o.auth);
      if (!caller.ok) return caller;
      const resolved = resolveExtensionTarget(req.url ?? '/', req.headers, o.clusterUrlBases);
      if (!resolved.ok)
        return {
          ok: false,
          failure: resolved.failure,
          ...(resolved.extension ? { target: { extension: resolved.extension } } : {}),
        };
      const { identity, via, jti } = caller.caller;
      const target: ExtensionRequest = { ...resolved.target, caller: identity, via, ...(jti ? { jti } : {}) };
      if (o.isRevoked?.(target.agent))
        return {
          ok: false,
          failure: { name: 'REVOKED', detail: `agent ${target.agent} has been revoked` },
          target,
        };
      return { ok: true, target, headers: forwardedHeaders(req, strip) };
    },
    head: (req, target, headers, upgrade) => ({
      case: 'extension',
      value: {
        name: target.extension,
        http: { method: req.method ?? 'GET', path: target.path, headers, upgrade },
      },
    }),
    // Bodies may stream on for as long as they last; the head must come in time.
    deadlineCoversBody: () => false,
    // Event streams must reach the browser as they come: no waiting for a first body chunk.
    flushHead: () => true,
    // Cookies never come back: a backend must not set them on the Argo CD origin.
    stripResponse: isStrippedBackendResponseHeader,
    describe: (target) => ({ extension: target.extension }),
    headArrived: (_req, target, seconds) => o.metrics.headArrived(target, seconds),
    finished: (report) => o.metrics.finished(report),
  };
}
