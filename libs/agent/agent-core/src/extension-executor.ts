import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { isExtensionName } from '@pullplane/extension-config';
import { isStrippedExtensionRequestHeader } from '@pullplane/names';
import { checkRequestPath, type HttpRequestHead, requestHasBody } from '@pullplane/proto';
import { type RequestLog, requestLog } from '@pullplane/telemetry';
import { bridgeUpgraded, type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { type BackendCall, dispatchCall, SAFE_METHODS } from './backend-call.js';
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
    const path = `${ext.url.pathname.replace(/\/+$/, '')}${head.path}`;
    const started = process.hrtime.bigint();
    const done = (status: number, failed: boolean) => {
      // The extension proxy writes the audit line; here it is a debug trace.
      log.debug(
        { status, durationMs: Number(process.hrtime.bigint() - started) / 1e6, failed },
        'extension request',
      );
      this.opts.onRequest?.(ext.name, status, failed);
    };
    const backendFailed = (err: NodeJS.ErrnoException) => {
      if (stream.destroyed) return;
      if (!stream.hasResponded) {
        const timeout = err.code === 'ECONNTIMEOUT' || err.code === 'UND_ERR_CONNECT_TIMEOUT';
        fail(
          timeout ? 'BACKEND_TIMEOUT' : 'BACKEND_UNREACHABLE',
          `${ext.url.host}: ${err.code ?? err.message}`,
        );
        return;
      }
      log.warn({ err: err.message }, 'extension backend failed mid-response');
      stream.reset(TunnelErrorCode.INTERNAL, `extension backend failed: ${err.message}`);
    };
    if (head.upgrade) {
      this.upgrade(
        stream,
        ext,
        { ...headers, connection: 'Upgrade', upgrade: head.upgrade },
        path,
        head,
        log,
        { done, backendFailed },
      );
      return;
    }
    let complete = false;
    let call: BackendCall | undefined;
    let status = 0;
    // A streamed body goes through its own pipe: the call destroys what it read, and the
    // logical stream's response side is still in use. Without a length it goes chunked.
    const body = requestHasBody(stream.open) ? stream.pipe(new PassThrough()) : undefined;
    // A bodiless request's side still has to be read to its end, or the stream never closes.
    if (!body) stream.resume();
    call = dispatchCall(
      ext.pool,
      { path, method: head.method, headers, body: body ?? null },
      {
        onResponse: (res) => {
          status = res.status;
          stream.respond(status, backendResponseHeaders(res));
        },
        // Chunks written straight on, the call paused while the tunnel is full.
        onData: (chunk) => {
          if (stream.write(chunk)) return true;
          stream.once('drain', () => call?.resume());
          return false;
        },
        onEnd: () => {
          complete = true;
          stream.end();
          done(status, false);
        },
        onError: (err) => {
          complete = true;
          if (status) done(status, true);
          backendFailed(err);
        },
      },
      SAFE_METHODS.has(head.method) && !body
        ? {
            onResend: (err) =>
              log.debug(
                { err: err.message },
                'kept-alive extension connection closed under the request; sent again',
              ),
          }
        : {},
    );
    // The requester went away (user closed the page, its timeout passed): stop the backend call.
    stream.on('close', () => {
      if (!complete) call?.abort();
    });
  }

  /**
   * An Upgrade (WebSocket and the like) on a connection of its own: the backend may answer
   * anything but 101 (a refusal the user should see), which node:http passes on as a response.
   */
  private upgrade(
    stream: LogicalStream,
    ext: ServedExtension,
    headers: Record<string, string | string[]>,
    path: string,
    head: HttpRequestHead,
    log: RequestLog,
    end: {
      done: (status: number, failed: boolean) => void;
      backendFailed: (err: NodeJS.ErrnoException) => void;
    },
  ): void {
    const url = ext.url;
    const req: ClientRequest = (url.protocol === 'https:' ? https : http).request({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      method: head.method,
      path,
      headers: { ...headers, host: url.host },
      agent: false,
    });
    let complete = false;
    const connectTimer = setTimeout(
      () => req.destroy(Object.assign(new Error('connect timeout'), { code: 'ECONNTIMEOUT' })),
      ext.backend.connectionTimeoutMs || 2_147_483_647,
    );
    req.on('socket', (socket: Socket) => socket.once('connect', () => clearTimeout(connectTimer)));
    req.on('response', (res: IncomingMessage) => {
      // Refused: an ordinary response, and the connection is not kept.
      clearTimeout(connectTimer);
      const status = res.statusCode ?? 502;
      stream.respond(status, backendResponseHeaders(res));
      res.on('end', () => {
        complete = true;
        end.done(status, false);
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
      stream.respond(101, backendResponseHeaders(res, { upgraded: true }));
      log.info({ upgrade: head.upgrade }, 'extension connection upgraded');
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
      end.backendFailed(err);
    });
    stream.on('close', () => {
      if (!complete && !req.destroyed) req.destroy();
    });
    // The upgrade request itself has no body; bytes that follow belong to the new protocol.
    req.end();
  }
}
