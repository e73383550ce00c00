import { writeFile } from 'node:fs/promises';
import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { addCustomResource, type CustomResourceOptions, createBuiltinRegistry } from './builtin-resources.js';
import { createFakeKubeStore, type FakeKubeStore } from './fake-store.js';
import { firstValues, sendStatus } from './http-io.js';
import { hasImpersonation, impersonate, PlainTextError } from './impersonation.js';
import { KubeApi } from './kube-api.js';
import { buildKubeconfig, type KubeconfigOptions } from './kubeconfig.js';
import { routeNonResource } from './non-resource-routes.js';
import { ObjectStore } from './object-store.js';
import { PodLogs } from './pod-logs.js';
import { AGENT_SERVICE_ACCOUNT_USER, type PolicyRule, RbacRules } from './rbac.js';
import { resolveRoute } from './request-path.js';
import { handleResource } from './resource-handler.js';
import type { ResourceRegistry, ResourceType } from './resource-registry.js';
import type { ServerContext } from './server-context.js';
import { errors, StatusError } from './status.js';

export interface RequestLog {
  method: string;
  path: string;
  /** First value of each query parameter. */
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  time: number;
  /** Client certificate CN, or `tokenUser` for bearer-token requests; undefined when anonymous. */
  user?: string | undefined;
  /** Response status, filled in once the response has been sent. */
  status?: number | undefined;
}

export interface FaultRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

/** What a fault hook can make a request do (return undefined to serve normally). */
export type FaultAction =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { hang: true }
  | { destroy: true }
  | { delayMs: number };

export type FaultHook = (req: FaultRequest) => FaultAction | undefined;

export interface FakeKubeTlsOptions {
  cert: string;
  key: string;
  /** CA that signed `cert`, written into kubeconfig() output. */
  ca?: string | undefined;
  /** When set, client certificates signed by this CA authenticate requests (CN = user). */
  clientCa?: string | undefined;
}

export interface FakeKubeApiServerOptions {
  host?: string | undefined;
  port?: number | undefined;
  tls?: FakeKubeTlsOptions | undefined;
  /** When set, requests need `Authorization: Bearer <token>` (or a valid client certificate). */
  token?: string | undefined;
  /** The user `token` authenticates as (default AGENT_SERVICE_ACCOUNT_USER, the agent's service account). */
  tokenUser?: string | undefined;
  /**
   * Refuse what a real API server refuses (default true): `Impersonate-*` without the `impersonate`
   * verb (403), responses in an encoding the client did not accept (406), `Content-Type: *\/*` and other
   * unknown body types (415), Secret `data` that is not base64 (400), `stringData` kept as sent.
   * false restores the lenient fake of old, for a test that shows what a check catches.
   */
  strict?: boolean | undefined;
  /**
   * RBAC rules per user name (certificate CN, `tokenUser`, or `system:anonymous` when no credentials are
   * required). Users not listed get FULL_ACCESS_RULES: everything but impersonation.
   */
  rbac?: Record<string, readonly PolicyRule[]> | undefined;
  /** Reported by /version (default v1.30.4). */
  gitVersion?: string | undefined;
  /** Added before every response. */
  latencyMs?: number | undefined;
  fault?: FaultHook | undefined;
  /** Watch history length; older resourceVersions get 410 Expired (default 5000 changes). */
  historySize?: number | undefined;
  /** Interval of BOOKMARK events for watches that allow them (default 1000 ms). */
  bookmarkIntervalMs?: number | undefined;
  /** Answer aggregated discovery when asked (default true); false forces the legacy per-group requests. */
  aggregatedDiscovery?: boolean | undefined;
  /** Request log ring size (default 10000). */
  maxRequestLog?: number | undefined;
  /** Server-side watch timeout when the client sets none (default 1800 s). */
  defaultWatchTimeoutSeconds?: number | undefined;
}

export interface FakeKubeApiServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly store: FakeKubeStore;
  readonly registry: ResourceRegistry;
  /** Every request received, oldest first (bounded by maxRequestLog). */
  readonly requests: RequestLog[];
  clearRequests(): void;
  /** Number of open watch streams (drops back when clients disconnect). */
  activeWatches(): number;
  /** Number of open `logs -f` streams. */
  activeLogFollows(): number;
  kubeconfig(opts?: KubeconfigOptions): string;
  /** Writes kubeconfig() to a file and returns the path. */
  writeKubeconfig(path: string, opts?: KubeconfigOptions): Promise<string>;
  addCustomResource(opts: CustomResourceOptions): ResourceType;
  setLatency(ms: number): void;
  setFault(hook: FaultHook | undefined): void;
  /** Replaces a user's RBAC rules; undefined gives the user FULL_ACCESS_RULES again. */
  setRbac(user: string, rules: readonly PolicyRule[] | undefined): void;
  close(): Promise<void>;
}

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

function peerName(req: IncomingMessage): string | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (!socket.authorized || typeof socket.getPeerCertificate !== 'function') return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}

/**
 * Starts an in-memory Kubernetes API server that kubectl and client libraries talk to
 * unmodified (discovery, CRUD, patches, server-side apply, watch, logs, tables).
 */
export async function startFakeKubeApiServer(
  options: FakeKubeApiServerOptions = {},
): Promise<FakeKubeApiServer> {
  const registry = createBuiltinRegistry();
  const store = new ObjectStore(options.historySize ?? 5000);
  const logs = new PodLogs();
  const strict = options.strict ?? true;
  const api = new KubeApi(registry, store, logs, strict);
  const rbac = new RbacRules(options.rbac);
  const tokenUser = options.tokenUser ?? AGENT_SERVICE_ACCOUNT_USER;
  const ctx: ServerContext = {
    api,
    registry,
    store,
    logs,
    gitVersion: options.gitVersion ?? 'v1.30.4',
    strict,
    rbac,
    watches: new Set(),
    logFollowers: new Set(),
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 1000,
    defaultWatchTimeoutSeconds: options.defaultWatchTimeoutSeconds ?? 1800,
  };
  for (const ns of DEFAULT_NAMESPACES) api.ensureNamespace(ns);

  const requests: RequestLog[] = [];
  const maxLog = options.maxRequestLog ?? 10_000;
  let latencyMs = options.latencyMs ?? 0;
  let fault = options.fault;
  const aggregated = options.aggregatedDiscovery ?? true;
  const hung = new Set<ServerResponse>();
  let address = '';

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const user =
      peerName(req) ??
      (options.token && req.headers.authorization === `Bearer ${options.token}` ? tokenUser : undefined);
    const entry: RequestLog = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: firstValues(url.searchParams),
      headers: { ...req.headers },
      time: Date.now(),
      user,
    };
    requests.push(entry);
    if (requests.length > maxLog) requests.splice(0, requests.length - maxLog);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    try {
      const authRequired = options.token !== undefined || options.tls?.clientCa !== undefined;
      if (authRequired && user === undefined && !isPublicPath(url.pathname)) throw errors.unauthorized();
      const action = fault?.({
        method: entry.method,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
      });
      if (action) {
        if ('hang' in action) {
          hung.add(res);
          res.on('close', () => hung.delete(res));
          return;
        }
        if ('destroy' in action) {
          req.socket.destroy();
          return;
        }
        if ('delayMs' in action) await sleep(action.delayMs);
        else {
          const body = action.body ?? errors.internal('injected fault').toStatus();
          res.writeHead(action.status, { 'Content-Type': 'application/json', ...action.headers });
          res.end(typeof body === 'string' ? body : JSON.stringify(body));
          return;
        }
      }
      if (latencyMs > 0) await sleep(latencyMs);
      // Impersonation is decided before authorization and routing, as in the API server's filter chain.
      const authenticated = user ?? 'system:anonymous';
      const actingUser =
        strict && hasImpersonation(req.headers)
          ? impersonate(rbac, authenticated, req.headers, req.url ?? '/')
          : authenticated;
      const route = resolveRoute(registry, url.pathname);
      if (route.kind === 'resource') await handleResource(ctx, req, res, route, url.searchParams, actingUser);
      else if (route.kind === 'unknown-resource') throw errors.notFoundPath();
      else routeNonResource(ctx, req, res, url, route, { aggregated, address });
    } catch (err) {
      if (err instanceof PlainTextError && !res.headersSent) {
        res.writeHead(err.code, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(err.message);
        return;
      }
      const status =
        err instanceof StatusError ? err : errors.internal((err as Error).message ?? String(err));
      if (res.headersSent) res.destroy();
      else sendStatus(res, status);
    }
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res);
  };
  const server = options.tls
    ? createHttpsServer(
        {
          cert: options.tls.cert,
          key: options.tls.key,
          ca: options.tls.clientCa,
          requestCert: options.tls.clientCa !== undefined,
          rejectUnauthorized: false,
        },
        listener,
      )
    : createHttpServer({ noDelay: true }, listener);
  // exec/attach/port-forward need SPDY or WebSocket streams, which the fake does not implement.
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: firstValues(url.searchParams),
      headers: { ...req.headers },
      time: Date.now(),
      status: 400,
    });
    const body = JSON.stringify(
      new StatusError(
        400,
        'BadRequest',
        'streaming upgrades (exec, attach, port-forward) are not supported by the fake API server',
      ).toStatus(),
    );
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  address = `${host}:${port}`;
  const url = `${options.tls ? 'https' : 'http'}://${host}:${port}`;

  const kubeconfig = (opts: KubeconfigOptions = {}) =>
    buildKubeconfig({
      token: options.token,
      caCert: options.tls?.ca,
      ...opts,
      server: opts.server ?? url,
    });

  return {
    url,
    host,
    port,
    store: createFakeKubeStore(api),
    registry,
    requests,
    clearRequests: () => {
      requests.length = 0;
    },
    activeWatches: () => ctx.watches.size,
    activeLogFollows: () => ctx.logFollowers.size,
    kubeconfig,
    async writeKubeconfig(path, opts) {
      await writeFile(path, kubeconfig(opts), { mode: 0o600 });
      return path;
    },
    addCustomResource: (opts) => addCustomResource(registry, opts),
    setLatency(ms) {
      latencyMs = ms;
    },
    setFault(hook) {
      fault = hook;
    },
    setRbac: (user, rules) => rbac.set(user, rules),
    async close() {
      for (const res of [...ctx.watches, ...ctx.logFollowers]) res.end();
      for (const res of hung) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Health endpoints stay reachable without credentials, as on a real cluster. */
function isPublicPath(path: string): boolean {
  return path === '/healthz' || path === '/livez' || path === '/readyz' || path === '/version';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
