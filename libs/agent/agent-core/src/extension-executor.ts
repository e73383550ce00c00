import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { isExtensionName } from '@pullplane/extension-config';
import { isStrippedExtensionRequestHeader } from '@pullplane/names';
import { checkRequestPath, type HttpRequestHead, requestHasBody } from '@pullplane/proto';
import { type RequestLog, requestLog } from '@pullplane/telemetry';
import { bridgeUpgraded, type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { backendResponseHeaders } from './backend-response-headers.js';
import { type ExtensionErrorName, extensionStatus } from './extension-errors.js';
import type { ExtensionRegistry, ServedExtension } from './extension-registry.js';

/**
 * Request headers never passed to a backend: hop-by-hop ones, the user's Argo CD credentials
 * and identity headers of the hops in between, impersonation and request rewriting (the shared
 * rule; Argo CD strips Cookie and Authorization, we strip them again), and forwarding headers that describe our hops, not the
 * user's. `Argocd-*` headers pass: they are what the backend is meant to read.
 */
const FORWARDING = new Set(['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']);
const stripRequest = (lower: string) => isStrippedExtensionRequestHeader(lower) || FORWARDING.has(lower);
// Response headers never passed back (`backendResponseHeaders`): hop-by-hop ones, and
// cookies — a backend in a workload cluster must not set cookies on the Argo CD origin (it could
// shadow `argocd.token`).

export interface ExtensionExecutorOptions {
  registry: ExtensionRegistry;
  agentName: string;
  logger: Logger;
  /** Each request served: extension (`_unknown` when not in the map), status, and how it ended. */
  onRequest?: (extension: string, status: number, failed: boolean) => void;
}

/**
 * Serves `extension` logical streams: only extensions in the agent's map, only under their
 * base URL. The principal names an extension and a relative path; where that leads is the
 * agent's decision alone. Bodies stream both ways with the tunnel's credit; an Upgrade is
 * performed against the backend and the switched connection bridged onto the stream.
 */
export class ExtensionExecutor {
  constructor(private readonly opts: ExtensionExecutorOptions) {}

  handle(stream: LogicalStream): void {
    const head = stream.open.head;
    if (head.case !== 'extension') {
      stream.reset(
        TunnelErrorCode.REFUSED,
        `extension executor cannot serve ${head.case ?? 'an empty'} request`,
      );
      return;
    }
    const { name } = head.value;
    const req = head.value.http;
    const log = requestLog(this.opts.logger, () => ({
      requestId: stream.open.requestId,
      extension: name,
      method: req?.method,
      path: req?.path,
    }));
    const fail = (what: ExtensionErrorName, detail?: string, label = name) => {
      const { code, body } = extensionStatus(what, detail);
      log.info({ status: code, reason: what, detail }, 'extension request refused');
      this.opts.onRequest?.(label, code, true);
      if (stream.destroyed) return;
      stream.respond(code, [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'Content-Length', value: String(Buffer.byteLength(body)) },
      ]);
      stream.end(body);
      stream.resume();
    };
    const ext = isExtensionName(name) ? this.opts.registry.lookup(name) : undefined;
    const problem = !req?.method ? 'no request' : checkRequestPath(req.path);
    const resolved = ext ? this.opts.registry.resolveHeaders(ext) : undefined;
    if (!isExtensionName(name)) fail('BAD_NAME', undefined, '_unknown');
    else if (!ext)
      fail(
        'UNKNOWN_EXTENSION',
        `extension "${name}" is not served by agent ${this.opts.agentName}`,
        '_unknown',
      );
    else if (problem || !req) fail('BAD_PATH', problem);
    else if (!resolved?.ok)
      fail(
        'MISCONFIGURED',
        `keys ${resolved?.missing.join(', ')} missing from ${this.opts.registry.secretDescription}`,
      );
    else this.forward(stream, ext, req, resolved.headers, log, fail);
  }

  private forward(
    stream: LogicalStream,
    ext: ServedExtension,
    head: HttpRequestHead,
    extra: Array<{ name: string; value: string }>,
    log: RequestLog,
    fail: (what: ExtensionErrorName, detail?: string) => void,
  ): void {
    const headers: Record<string, string | string[]> = {};
    for (const h of head.headers) {
      const lower = h.name.toLowerCase();
      if (stripRequest(lower)) continue;
      const prev = headers[lower];
      headers[lower] = prev === undefined ? h.value : ([] as string[]).concat(prev, h.value);
    }
    // The backend continues the trace the Open carries (the proxy's span, or the relay's).
    const { traceparent, tracestate } = stream.open;
    if (traceparent) {
      headers.traceparent = traceparent;
      if (tracestate) headers.tracestate = tracestate;
    }
    // Configured headers replace what came with the request, as Argo CD's do.
    for (const h of extra) headers[h.name.toLowerCase()] = h.value;
    const upgrade = head.upgrade;
    if (upgrade) {
      headers.connection = 'Upgrade';
      headers.upgrade = upgrade;
    }
    const hasBody = requestHasBody(stream.open);
    if (hasBody && headers['content-length'] === undefined && !upgrade)
      headers['transfer-encoding'] = 'chunked';
    const base = ext.url.pathname.replace(/\/+$/, '');
    const url = ext.url;
    const options: http.RequestOptions = {
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      method: head.method,
      // The checked relative path appended to the base path as text: no resolution, no escape.
      path: `${base}${head.path}`,
      headers: { ...headers, host: url.host },
      agent: ext.pool,
    };
    const started = process.hrtime.bigint();
    let complete = false;
    const req: ClientRequest = (url.protocol === 'https:' ? https : http).request(options);
    let connectTimer: NodeJS.Timeout | undefined;
    req.on('socket', (socket: Socket) => {
      this.opts.registry.socketInUse(socket);
      if (socket.connecting) {
        connectTimer = setTimeout(
          () => req.destroy(Object.assign(new Error('connect timeout'), { code: 'ECONNTIMEOUT' })),
          ext.backend.connectionTimeoutMs,
        );
        socket.once('connect', () => clearTimeout(connectTimer));
      }
    });
    const done = (status: number, failed: boolean) => {
      // The extension proxy writes the audit line; here it is a debug trace.
      log.debug(
        { status, durationMs: Number(process.hrtime.bigint() - started) / 1e6, failed },
        'extension request',
      );
      this.opts.onRequest?.(ext.name, status, failed);
    };
    req.on('response', (res: IncomingMessage) => {
      clearTimeout(connectTimer);
      const status = res.statusCode ?? 502;
      stream.respond(status, backendResponseHeaders(res));
      res.on('end', () => {
        complete = true;
        done(status, false);
      });
      res.on('error', (err: Error) => {
        if (!stream.destroyed)
          stream.reset(TunnelErrorCode.INTERNAL, `extension backend stream failed: ${err.message}`);
      });
      res.pipe(stream);
    });
    req.on('upgrade', (res: IncomingMessage, socket: Socket, rest: Buffer) => {
      clearTimeout(connectTimer);
      complete = true;
      this.opts.registry.socketInUse(socket);
      stream.respond(101, backendResponseHeaders(res, { upgraded: true }));
      log.info({ upgrade }, 'extension connection upgraded');
      bridgeUpgraded(socket, stream, {
        head: rest,
        onClose: (s) => {
          log.info({ ...s, error: s.error?.message }, 'upgraded extension connection closed');
          this.opts.onRequest?.(ext.name, 101, s.error !== undefined);
        },
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(connectTimer);
      if (stream.destroyed) return;
      if (!stream.hasResponded) {
        const timeout = err.code === 'ECONNTIMEOUT';
        fail(
          timeout ? 'BACKEND_TIMEOUT' : 'BACKEND_UNREACHABLE',
          `${ext.url.host}: ${err.code ?? err.message}`,
        );
        return;
      }
      log.warn({ err: err.message }, 'extension backend failed mid-response');
      stream.reset(TunnelErrorCode.INTERNAL, `extension backend failed: ${err.message}`);
    });
    // The requester went away (user closed the page, its timeout passed): stop the backend call.
    stream.on('close', () => {
      if (!complete && !req.destroyed) req.destroy();
    });
    if (upgrade) {
      // The upgrade request itself has no body; bytes that follow belong to the new protocol.
      req.end();
      return;
    }
    if (hasBody) stream.pipe(req);
    else {
      req.end();
      stream.resume();
    }
  }
}
