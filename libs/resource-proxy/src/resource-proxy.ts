import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Span, Tracer } from '@opentelemetry/api';
import type { ExchangeRevocation, OpenExchanges } from '@pullplane/auth';
import {
  IMPERSONATION_HEADER_PREFIX,
  isStrippedRequestHeader,
  isStrippedResponseHeader,
} from '@pullplane/names';
import type { RouteOpenInit } from '@pullplane/router';
import { getOrCreateCounter, getOrCreateHistogram } from '@pullplane/telemetry';
import { type ListenerTls, listenerSecureContext } from '@pullplane/tls-material';
import { callerTraceContext, endHttpServerSpan, startHttpServerSpan, traceHeaders } from '@pullplane/tracing';
import {
  bindHttpExchange,
  Deadline,
  isTunnelError,
  RESPONSE_FRAMING_METRIC,
  relayHttpResponse,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
} from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { argocdAgentResourceProxyMetrics } from './argocd-agent-metrics.js';
import { fromTunnelError, type ProxyFailure, statusBody } from './errors.js';
import { type CallerAuthOptions, type ResolvedTarget, resolveTarget } from './request-target.js';

export interface StreamOpener {
  open(agent: string, init: RouteOpenInit): TunnelStream;
}

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
  /** Non-streaming requests fail with 504 when no response head arrives in time. */
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

const UNSUPPORTED_SUBRESOURCE = /\/pods\/[^/]+\/(exec|attach|portforward)(\?|$)/;

export interface ResourceProxy {
  readonly port: number;
  /** New certificate, key or CA for connections from now on (rotation without a restart). */
  reloadTls(material: Pick<ResourceProxyTls, 'cert' | 'key' | 'ca'>): void;
  listen(): Promise<void>;
  /** Stops accepting; in-flight requests (watches too) get `graceMs`, then are cut. */
  close(graceMs?: number): Promise<void>;
}

function isStreaming(path: string): boolean {
  const q = new URLSearchParams(path.split('?')[1] ?? '');
  const watch = q.get('watch');
  if (watch === 'true' || watch === '1' || path.includes('/watch/')) return true;
  return /\/log(\?|$)/.test(path) && q.get('follow') === 'true';
}

/**
 * Looks like a Kubernetes API server to Argo CD and kubectl, and forwards each request
 * through the owning agent's tunnel. Bodies stream both ways; nothing is buffered whole.
 */
export function createResourceProxy(opts: ResourceProxyOptions): ResourceProxy {
  const log = opts.logger;
  const requests = getOrCreateCounter(opts.registry, {
    name: 'resource_proxy_requests_total',
    help: 'Requests answered by the resource proxy, by status code class and verb.',
    labelNames: ['code', 'method'],
  });
  const duration = getOrCreateHistogram(opts.registry, {
    name: 'resource_proxy_request_duration_seconds',
    help: 'Time to the response head through the tunnel.',
    labelNames: ['method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  });
  const bytes = getOrCreateCounter(opts.registry, {
    name: 'resource_proxy_body_bytes_total',
    help: 'Body bytes through the resource proxy: in (request bodies) and out (response bodies).',
    labelNames: ['direction'],
  });
  const framingErrors = getOrCreateCounter(opts.registry, RESPONSE_FRAMING_METRIC);
  const compat = argocdAgentResourceProxyMetrics(opts.registry, opts.isKnownAgent ?? (() => true));
  const impersonators = new Set(opts.impersonators ?? []);
  // The configured mesh identity header, whatever it is called, is the caller's identity.
  const meshHeader = opts.auth.meshIdentity?.method.header.toLowerCase();
  const tracer = opts.tracer;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = process.hrtime.bigint();
    const requestId = (req.headers['x-request-id'] as string | undefined)?.slice(0, 64) || randomUUID();
    let bytesIn = 0;
    let bytesOut = 0;
    let target: ResolvedTarget | undefined;
    let span: Span | undefined;
    let spanEnded = false;
    const startedAt = tracer ? Date.now() : 0;
    // Answers are counted (and traced); the per-request line is at debug, except for refusals
    // and failures, which stay at info (rare, and what an operator investigates).
    const audit = (status: number, extra: Record<string, unknown> = {}) => {
      requests.inc({ code: `${Math.floor(status / 100)}xx`, method: req.method ?? '' });
      if (bytesIn > 0) bytes.inc({ direction: 'in' }, bytesIn);
      if (bytesOut > 0) bytes.inc({ direction: 'out' }, bytesOut);
      // A request refused before authentication is traced too, but never under a caller's trace.
      if (tracer && !spanEnded) {
        span ??= startHttpServerSpan(tracer, req, { requestId, startTime: startedAt, agent: undefined });
        endHttpServerSpan(
          span,
          status,
          target?.agent,
          extra.error === undefined ? undefined : (failureName ?? 'MID_BODY'),
        );
        spanEnded = true;
      }
      const level = status === 401 || status === 403 || status >= 500 || extra.error ? 'info' : 'debug';
      if (!log.isLevelEnabled(level)) return;
      log[level](
        {
          requestId,
          ...(span ? { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId } : {}),
          caller: target?.caller,
          via: target?.via,
          agent: target?.agent,
          verb: req.method,
          path: target?.path ?? req.url,
          status,
          bytesIn,
          bytesOut,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          ...extra,
        },
        'resource proxy request',
      );
    };
    let failureName: string | undefined;
    const fail = (f: ProxyFailure) => {
      failureName = f.name;
      const { code, body } = statusBody(f);
      if (!res.headersSent) {
        res.writeHead(code, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      } else {
        res.destroy();
      }
      audit(code, { error: f.detail ?? f.name });
      if (target) compat.failed(target.agent, f.name);
      req.resume();
    };

    const resolved = await resolveTarget(req, opts.auth);
    if (!resolved.ok) return fail(resolved.failure);
    target = resolved.target;
    // Only an authenticated caller's traceparent becomes our parent.
    if (tracer)
      span = startHttpServerSpan(tracer, req, { requestId, startTime: startedAt, agent: target.agent });
    compat.request(target.agent);
    if (UNSUPPORTED_SUBRESOURCE.test(target.path) || req.headers.upgrade)
      return fail({ name: 'UNSUPPORTED' });
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > opts.maxRequestBodyBytes) {
      return fail({ name: 'TOO_LARGE', detail: `${declared} bytes > ${opts.maxRequestBodyBytes}` });
    }
    const hasBody = declared > 0 || req.headers['transfer-encoding'] !== undefined;
    const headers: Array<{ name: string; value: string }> = [];
    const mayImpersonate = impersonators.has(target.caller);
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      const lower = name.toLowerCase();
      if (
        isStrippedRequestHeader(lower) ||
        lower === meshHeader ||
        (lower.startsWith(IMPERSONATION_HEADER_PREFIX) && !mayImpersonate)
      )
        continue;
      headers.push({ name, value: req.rawHeaders[i + 1]! });
    }
    const streaming = isStreaming(target.path);
    const deadline = Deadline.after(opts.requestTimeoutMs);
    let stream: TunnelStream;
    try {
      stream = opts.router.open(target.agent, {
        head: { case: 'http', value: { method: req.method ?? 'GET', path: target.path, headers } },
        hasBody,
        requestId,
        ...(span ? traceHeaders(span) : callerTraceContext(req.headers)),
        // One deadline for routing, the agent's answer (not a watch's) and the timer below.
        deadline,
        routeOnly: streaming,
      });
    } catch (err) {
      if (isTunnelError(err)) return fail(fromTunnelError(err));
      throw err;
    }

    let revoked: ExchangeRevocation | undefined;
    const release = opts.openExchanges?.add({ agent: target.agent, jti: target.jti }, (why) => {
      revoked = why;
      stream.reset(TunnelErrorCode.CANCELLED, why.reason);
    });
    if (release) res.once('close', release);

    bindHttpExchange(req, res, stream, {
      hasBody,
      maxBodyBytes: opts.maxRequestBodyBytes,
      onBody: (n) => {
        bytesIn += n;
      },
      onTooLarge: () => fail({ name: 'TOO_LARGE', detail: `more than ${opts.maxRequestBodyBytes} bytes` }),
    });

    const cancelTimer = streaming
      ? undefined
      : deadline.onExpiry(() =>
          stream.reset(TunnelErrorCode.DEADLINE_EXCEEDED, `no answer within ${deadline.timeoutMs} ms`),
        );
    let head: Awaited<ReturnType<TunnelStream['responseHead']>>;
    try {
      head = await stream.responseHead();
    } catch (err) {
      cancelTimer?.();
      if (res.writableEnded || res.destroyed) return;
      if (revoked)
        return fail({
          name: revoked.kind === 'token' ? 'BAD_CREDENTIALS' : 'REVOKED',
          detail: revoked.reason,
        });
      return fail(
        fromTunnelError(isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, String(err))),
      );
    }
    cancelTimer?.();
    duration.observe({ method: req.method ?? '' }, Number(process.hrtime.bigint() - started) / 1e9);
    relayHttpResponse(req, res, stream, head, {
      strip: isStrippedResponseHeader,
      flushHead: streaming,
      onBody: (n) => {
        bytesOut += n;
      },
      onFramingViolation: (reason, detail) => {
        framingErrors.inc({ proxy: 'resource', reason });
        log.warn(
          { requestId, agent: target!.agent, caller: target!.caller, status: head.status, reason, detail },
          'agent response broke HTTP framing',
        );
      },
      onEnd: ({ error, cancelled }) => {
        if (!error) return audit(head.status);
        audit(head.status, { error: error.message });
        // A caller that went away cancelled the stream itself: not the agent's failure.
        if (!cancelled) compat.failed(target!.agent, 'MID_BODY');
      },
    });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err: String(err), path: req.url }, 'resource proxy handler failed');
      if (!res.headersSent) {
        const { code, body } = statusBody({ name: 'CLUSTER_FAILED', detail: 'internal proxy error' });
        res.writeHead(code, { 'content-type': 'application/json' }).end(body);
      } else res.destroy();
    });
  };
  const server = opts.tls
    ? https.createServer(
        {
          ...listenerSecureContext(opts.tls),
          requestCert: true,
          rejectUnauthorized: false,
        },
        onRequest,
      )
    : http.createServer(onRequest);
  // Streaming requests live long: no server-side idle or request timeouts.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
  server.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
    const { code, body } = statusBody({ name: 'UNSUPPORTED' });
    socket.end(
      `HTTP/1.1 ${code} Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    log.debug({ err: err.message }, 'malformed HTTP request');
  });

  return {
    get port() {
      return (server.address() as AddressInfo | null)?.port ?? 0;
    },
    reloadTls(material) {
      if (!opts.tls) throw new Error('the resource proxy serves plaintext: no TLS to reload');
      (server as https.Server).setSecureContext(listenerSecureContext({ ...opts.tls, ...material }));
      log.info('resource proxy TLS material reloaded');
    },
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject);
          log.info(
            { host: opts.host, port: (server.address() as AddressInfo).port, tls: Boolean(opts.tls) },
            'resource proxy listening',
          );
          resolve();
        });
      });
    },
    close(graceMs = 5_000) {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, graceMs).unref();
      });
    },
  };
}
