import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Span, Tracer } from '@opentelemetry/api';
import type { ExchangeRevocation, OpenExchanges } from '@pullplane/auth';
import { isStrippedBackendResponseHeader, isStrippedExtensionRequestHeader } from '@pullplane/names';
import type { RouteOpenInit } from '@pullplane/router';
import { getOrCreateCounter, getOrCreateHistogram } from '@pullplane/telemetry';
import { type ListenerTls, listenerSecureContext } from '@pullplane/tls-material';
import { callerTraceContext, endHttpServerSpan, startHttpServerSpan, traceHeaders } from '@pullplane/tracing';
import {
  bindHttpExchange,
  bridgeUpgraded,
  Deadline,
  isTunnelError,
  RESPONSE_FRAMING_METRIC,
  relayHttpResponse,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
} from '@pullplane/tunnel';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type Caller, type CallerAuthOptions, identifyCaller } from './caller.js';
import { EXTENSION_METHODS, type ExtensionProxyFailure, failureBody, fromTunnelError } from './errors.js';
import { type ExtensionTarget, resolveExtensionTarget } from './target.js';

export interface StreamOpener {
  open(agent: string, init: RouteOpenInit): TunnelStream;
}

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

export interface ExtensionProxy {
  readonly port: number;
  reloadTls(material: Pick<ExtensionProxyTls, 'cert' | 'key' | 'ca'>): void;
  listen(): Promise<void>;
  /** Stops accepting; in-flight requests (event streams, WebSockets too) get `graceMs`, then are cut. */
  close(graceMs?: number): Promise<void>;
}

// Hop-by-hop, credentials and identity of the hops in between, impersonation and request
// rewriting never go on (`isStrippedExtensionRequestHeader`); cookies never come back
// (`isStrippedBackendResponseHeader`): a backend must not set them on the Argo CD origin.

/** Distinct extension names given their own metric series; beyond, `_other`. */
const MAX_EXTENSION_LABELS = 200;

interface Accepted {
  requestId: string;
  caller: Caller;
  target: ExtensionTarget;
  headers: Array<{ name: string; value: string }>;
}

/**
 * The extension proxy: Argo CD's API server calls it as the backend of every proxy extension;
 * it checks that the caller is the Argo CD server, picks the agent from Argo CD's target
 * headers, and streams the request through that agent's tunnel, where the agent alone decides
 * which in-cluster URL the extension name means.
 */
export function createExtensionProxy(opts: ExtensionProxyOptions): ExtensionProxy {
  const log = opts.logger;
  const requests = getOrCreateCounter(opts.registry, {
    name: 'extension_proxy_requests_total',
    help: 'Proxy extension requests answered, by extension, agent and status code (101: upgraded).',
    labelNames: ['extension', 'agent', 'code'],
  });
  const errors = getOrCreateCounter(opts.registry, {
    name: 'extension_proxy_errors_total',
    help: 'Proxy extension requests that failed at the proxy or on the way, by extension, agent and reason.',
    labelNames: ['extension', 'agent', 'reason'],
  });
  const duration = getOrCreateHistogram(opts.registry, {
    name: 'extension_proxy_request_duration_seconds',
    help: 'Time to the response head through the tunnel, by extension and agent.',
    labelNames: ['extension', 'agent'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
  });
  const framingErrors = getOrCreateCounter(opts.registry, RESPONSE_FRAMING_METRIC);
  const extensionLabels = new Set<string>();
  const labels = (t: Partial<ExtensionTarget> | undefined) => {
    let extension = t?.extension ?? '_none';
    if (t?.extension && !extensionLabels.has(extension)) {
      if (extensionLabels.size < MAX_EXTENSION_LABELS) extensionLabels.add(extension);
      else extension = '_other';
    }
    const agent = !t?.agent ? '_none' : (opts.isKnownAgent ?? (() => true))(t.agent) ? t.agent : '_unknown';
    return { extension, agent };
  };
  const meshHeader = opts.auth.meshIdentity?.header;
  const strip = (lower: string) => isStrippedExtensionRequestHeader(lower) || lower === meshHeader;

  /** Who is asking, for which agent and extension, with the headers that go on; or why not. */
  const accept = async (
    req: IncomingMessage,
  ): Promise<
    | { ok: true; a: Accepted }
    | { ok: false; failure: ExtensionProxyFailure; target?: Partial<ExtensionTarget> }
  > => {
    const caller = await identifyCaller(req, opts.auth);
    if (!caller.ok) return caller;
    const resolved = resolveExtensionTarget(req.url ?? '/', req.headers, opts.clusterUrlBases);
    if (!resolved.ok)
      return {
        ok: false,
        failure: resolved.failure,
        ...(resolved.extension ? { target: { extension: resolved.extension } } : {}),
      };
    const target = resolved.target;
    if (opts.isRevoked?.(target.agent))
      return {
        ok: false,
        failure: { name: 'REVOKED', detail: `agent ${target.agent} has been revoked` },
        target,
      };
    const headers: Array<{ name: string; value: string }> = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      if (!strip(name.toLowerCase())) headers.push({ name, value: req.rawHeaders[i + 1]! });
    }
    const requestId = (req.headers['x-request-id'] as string | undefined)?.slice(0, 64) || randomUUID();
    return { ok: true, a: { requestId, caller: caller.caller, target, headers } };
  };

  // Spans by request: started when the caller is known, ended with the request's audit line.
  const tracer = opts.tracer;
  const spans = new WeakMap<IncomingMessage, { startedAt: number; span?: Span; ended?: boolean }>();
  const beginTrace = (req: IncomingMessage) => {
    if (tracer) spans.set(req, { startedAt: Date.now() });
  };
  /** The trace context the Open carries: our span's, or (untraced) an authenticated caller's own. */
  const traceOpen = (req: IncomingMessage, a: Accepted) => {
    const t = spans.get(req);
    if (!tracer || !t) return callerTraceContext(req.headers);
    t.span = startHttpServerSpan(tracer, req, {
      requestId: a.requestId,
      startTime: t.startedAt,
      agent: a.target.agent,
    });
    return traceHeaders(t.span);
  };
  const endTrace = (
    req: IncomingMessage,
    requestId: string | undefined,
    agent: string | undefined,
    status: number,
    failure: unknown,
  ) => {
    const t = spans.get(req);
    if (!tracer || !t || t.ended) return;
    t.ended = true;
    // A request refused before it was accepted is traced too, but never under a caller's trace.
    t.span ??= startHttpServerSpan(tracer, req, {
      requestId: requestId ?? '',
      startTime: t.startedAt,
      agent: undefined,
    });
    endHttpServerSpan(t.span, status, agent, typeof failure === 'string' ? failure : undefined);
  };

  const audit = (
    req: IncomingMessage,
    started: bigint,
    a: Omit<Partial<Accepted>, 'target'> & { target?: Partial<ExtensionTarget> | undefined },
    status: number,
    extra: Record<string, unknown> = {},
  ) => {
    endTrace(req, a.requestId, a.target?.agent, status, extra.failure);
    requests.inc({ ...labels(a.target), code: String(status) });
    const h = req.headers;
    log.info(
      {
        requestId: a.requestId,
        caller: a.caller?.identity,
        via: a.caller?.via,
        agent: a.target?.agent,
        extension: a.target?.extension,
        method: req.method,
        path: a.target?.path ?? req.url,
        status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        argocd: {
          user: h['argocd-username'],
          groups: h['argocd-user-groups'],
          application: h['argocd-application-name'],
          project: h['argocd-project-name'],
        },
        ...extra,
      },
      'extension request',
    );
  };

  /**
   * Keeps the exchange where a revocation of its token or agent finds it; `ended()` says why it
   * was ended, if it was. `release` runs when the exchange is over.
   */
  const track = (a: Accepted, stream: TunnelStream, over: { once(e: 'close', f: () => void): unknown }) => {
    let revoked: ExchangeRevocation | undefined;
    const release = opts.openExchanges?.add({ agent: a.target.agent, jti: a.caller.jti }, (why) => {
      revoked = why;
      stream.reset(TunnelErrorCode.CANCELLED, why.reason);
    });
    if (release) over.once('close', release);
    return (): ExtensionProxyFailure | undefined =>
      revoked && { name: revoked.kind === 'token' ? 'BAD_CREDENTIALS' : 'REVOKED', detail: revoked.reason };
  };

  const open = (
    req: IncomingMessage,
    a: Accepted,
    method: string,
    hasBody: boolean,
    upgrade: string,
  ): TunnelStream =>
    opts.router.open(a.target.agent, {
      ...traceOpen(req, a),
      head: {
        case: 'extension',
        value: {
          name: a.target.extension,
          http: { method, path: a.target.path, headers: a.headers, upgrade },
        },
      },
      hasBody,
      requestId: a.requestId,
      deadline: Deadline.after(opts.requestTimeoutMs),
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = process.hrtime.bigint();
    beginTrace(req);
    let a: Accepted | undefined;
    let target: Partial<ExtensionTarget> | undefined;
    let bytesIn = 0;
    let bytesOut = 0;
    const fail = (f: ExtensionProxyFailure) => {
      const { code, body, headers } = failureBody(f);
      if (!res.headersSent) {
        res.writeHead(code, headers);
        res.end(body);
      } else res.destroy();
      errors.inc({ ...labels(target), reason: f.name });
      audit(req, started, { ...a, target }, code, {
        error: f.detail ?? f.name,
        failure: f.name,
        bytesIn,
        bytesOut,
      });
      req.resume();
    };
    // Only what Argo CD forwards: TRACE, WebDAV or cache-purge methods never reach a backend.
    if (!EXTENSION_METHODS.has(req.method ?? ''))
      return fail({
        name: 'METHOD_NOT_ALLOWED',
        detail: `${String(req.method).slice(0, 32)} is not forwarded`,
      });
    const accepted = await accept(req);
    if (!accepted.ok) {
      target = accepted.target;
      return fail(accepted.failure);
    }
    a = accepted.a;
    target = a.target;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > opts.maxRequestBodyBytes)
      return fail({ name: 'TOO_LARGE', detail: `${declared} bytes > ${opts.maxRequestBodyBytes}` });
    const hasBody = declared > 0 || req.headers['transfer-encoding'] !== undefined;
    let stream: TunnelStream;
    try {
      stream = open(req, a, req.method ?? 'GET', hasBody, '');
    } catch (err) {
      if (isTunnelError(err)) return fail(fromTunnelError(err));
      throw err;
    }
    const revoked = track(a, stream, res);
    bindHttpExchange(req, res, stream, {
      hasBody,
      maxBodyBytes: opts.maxRequestBodyBytes,
      onBody: (n) => {
        bytesIn += n;
      },
      onTooLarge: () => fail({ name: 'TOO_LARGE', detail: `more than ${opts.maxRequestBodyBytes} bytes` }),
    });
    let head: Awaited<ReturnType<TunnelStream['responseHead']>>;
    try {
      head = await stream.responseHead();
    } catch (err) {
      if (res.writableEnded || res.destroyed) return;
      const why = revoked();
      if (why) return fail(why);
      return fail(
        fromTunnelError(isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, String(err))),
      );
    }
    duration.observe(labels(target), Number(process.hrtime.bigint() - started) / 1e9);
    relayHttpResponse(req, res, stream, head, {
      strip: isStrippedBackendResponseHeader,
      // Event streams must reach the browser as they come: no waiting for a first body chunk.
      flushHead: true,
      onBody: (n) => {
        bytesOut += n;
      },
      onFramingViolation: (reason, detail) => {
        framingErrors.inc({ proxy: 'extension', reason });
        log.warn(
          {
            requestId: a!.requestId,
            agent: a!.target.agent,
            extension: a!.target.extension,
            status: head.status,
            reason,
            detail,
          },
          'agent response broke HTTP framing',
        );
      },
      onEnd: ({ error, cancelled }) => {
        if (!error) return audit(req, started, a!, head.status, { bytesIn, bytesOut });
        if (!cancelled) errors.inc({ ...labels(target), reason: 'MID_BODY' });
        audit(req, started, a!, head.status, {
          error: error.message,
          failure: 'MID_BODY',
          bytesIn,
          bytesOut,
        });
      },
    });
  };

  const upgrade = async (req: IncomingMessage, socket: Socket, rest: Buffer) => {
    const started = process.hrtime.bigint();
    beginTrace(req);
    socket.on('error', () => undefined);
    const refuse = (f: ExtensionProxyFailure, target?: Partial<ExtensionTarget>, a?: Accepted) => {
      const { code, body, headers } = failureBody(f);
      const lines = Object.entries({ ...headers, connection: 'close' }).map(([k, v]) => `${k}: ${v}\r\n`);
      if (socket.writable) socket.end(`HTTP/1.1 ${code} ${httpReason(code)}\r\n${lines.join('')}\r\n${body}`);
      errors.inc({ ...labels(target), reason: f.name });
      audit(req, started, { ...a, target }, code, {
        error: f.detail ?? f.name,
        failure: f.name,
        upgrade: true,
      });
    };
    // A WebSocket handshake is a GET (RFC 6455 §4.1); no other protocol is switched to.
    if (req.method !== 'GET')
      return refuse({
        name: 'METHOD_NOT_ALLOWED',
        detail: `${String(req.method).slice(0, 32)} with Upgrade`,
      });
    const protocol = String(req.headers.upgrade ?? '');
    if (protocol.toLowerCase() !== 'websocket')
      return refuse({ name: 'UNSUPPORTED_UPGRADE', detail: `Upgrade: ${protocol.slice(0, 64)}` });
    const accepted = await accept(req);
    if (!accepted.ok) return refuse(accepted.failure, accepted.target);
    const a = accepted.a;
    let stream: TunnelStream;
    try {
      // Bytes after the 101 follow as Data; none are sent before it.
      stream = open(req, a, req.method ?? 'GET', true, protocol);
    } catch (err) {
      if (isTunnelError(err)) return refuse(fromTunnelError(err), a.target, a);
      throw err;
    }
    const revoked = track(a, stream, socket);
    const gone = () => {
      if (!stream.destroyed) stream.reset(TunnelErrorCode.CANCELLED, 'client went away');
    };
    socket.once('close', gone);
    let head: Awaited<ReturnType<TunnelStream['responseHead']>>;
    try {
      head = await stream.responseHead();
    } catch (err) {
      return refuse(
        revoked() ??
          fromTunnelError(isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, String(err))),
        a.target,
        a,
      );
    }
    socket.off('close', gone);
    duration.observe(labels(a.target), Number(process.hrtime.bigint() - started) / 1e9);
    const lines = [`HTTP/1.1 ${head.status} ${httpReason(head.status)}`];
    for (const h of head.headers) {
      const lower = h.name.toLowerCase();
      // The shared rule, except that a 101 names the protocol it switches to.
      if (isStrippedBackendResponseHeader(lower) && lower !== 'upgrade') continue;
      if (/[\r\n]/.test(h.name) || /[\r\n]/.test(h.value)) continue;
      lines.push(`${h.name}: ${h.value}`);
    }
    if (head.status !== 101) {
      // The backend declined the upgrade: its answer, then the connection closes.
      lines.push('connection: close');
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      stream.pipe(socket);
      stream.on('close', () => socket.destroy());
      audit(req, started, a, head.status, { upgrade: protocol });
      return;
    }
    lines.push('connection: Upgrade');
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    bridgeUpgraded(socket, stream, {
      head: rest,
      onClose: (s) => {
        if (s.error && !(isTunnelError(s.error) && s.error.code === TunnelErrorCode.CANCELLED))
          errors.inc({ ...labels(a.target), reason: 'UPGRADED_STREAM' });
        audit(req, started, a, 101, {
          upgrade: protocol,
          bytesIn: s.bytesIn,
          bytesOut: s.bytesOut,
          error: s.error?.message,
          ...(s.error ? { failure: 'UPGRADED_STREAM' } : {}),
        });
      },
    });
  };

  const app: FastifyInstance = Fastify({
    logger: false,
    // Long-lived event streams and WebSockets: no server-side request timeout.
    requestTimeout: 0,
    keepAliveTimeout: 65_000,
    return503OnClosing: true,
    forceCloseConnections: false,
    ...(opts.tls
      ? {
          https: {
            ...listenerSecureContext(opts.tls),
            requestCert: true,
            rejectUnauthorized: false,
          },
        }
      : {}),
  }) as unknown as FastifyInstance;
  // Bodies are streamed through untouched, never parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
  const route = (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => {
    reply.hijack();
    handle(request.raw, reply.raw).catch((err: unknown) => {
      log.error({ err: String(err), path: request.raw.url }, 'extension proxy handler failed');
      if (!reply.raw.headersSent) {
        const { code, body, headers } = failureBody({ name: 'INTERNAL', detail: 'internal proxy error' });
        reply.raw.writeHead(code, headers).end(body);
      } else reply.raw.destroy();
    });
  };
  app.route({ method: [...EXTENSION_METHODS], url: '/*', handler: route });
  // Every other method lands here, and is refused by `handle` with a 405.
  app.setNotFoundHandler(route);
  app.server.on('upgrade', (req: IncomingMessage, socket: Socket, rest: Buffer) => {
    upgrade(req, socket, rest).catch((err: unknown) => {
      log.error({ err: String(err) }, 'extension proxy upgrade failed');
      socket.destroy();
    });
  });
  app.server.on('clientError', (err: Error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    log.debug({ err: err.message }, 'malformed HTTP request');
  });
  app.server.headersTimeout = 60_000;

  return {
    get port() {
      return (app.server.address() as AddressInfo | null)?.port ?? 0;
    },
    reloadTls(material) {
      if (!opts.tls) throw new Error('the extension proxy serves plaintext: no TLS to reload');
      (app.server as HttpsServer).setSecureContext(listenerSecureContext({ ...opts.tls, ...material }));
      log.info('extension proxy TLS material reloaded');
    },
    async listen() {
      await app.listen({ host: opts.host, port: opts.port });
      log.info(
        { host: opts.host, port: (app.server.address() as AddressInfo).port, tls: Boolean(opts.tls) },
        'extension proxy listening',
      );
    },
    close(graceMs = 5_000) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          app.server.closeAllConnections();
          resolve();
        }, graceMs);
        timer.unref();
        app.server.closeIdleConnections();
        app.close().then(
          () => {
            clearTimeout(timer);
            resolve();
          },
          () => resolve(),
        );
      });
    },
  };
}

function httpReason(code: number): string {
  return (
    (
      {
        101: 'Switching Protocols',
        400: 'Bad Request',
        401: 'Unauthorized',
        403: 'Forbidden',
        404: 'Not Found',
        405: 'Method Not Allowed',
        413: 'Payload Too Large',
        500: 'Internal Server Error',
        502: 'Bad Gateway',
        503: 'Service Unavailable',
        504: 'Gateway Timeout',
      } as Record<number, string>
    )[code] ?? 'Status'
  );
}
