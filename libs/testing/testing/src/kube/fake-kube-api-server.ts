import { writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { addCustomResource, type CustomResourceOptions, createBuiltinRegistry } from './builtin-resources.js';
import { createFakeKubeStore, type FakeKubeStore } from './fake-store.js';
import { sendStatus } from './http-io.js';
import { PlainTextError } from './impersonation.js';
import { KubeApi } from './kube-api.js';
import { buildKubeconfig, type KubeconfigOptions } from './kubeconfig.js';
import { routeNonResource } from './non-resource-routes.js';
import { ObjectStore } from './object-store.js';
import { PodLogs } from './pod-logs.js';
import { AGENT_SERVICE_ACCOUNT_USER, type PolicyRule, RbacRules } from './rbac.js';
import { type FaultHook, RequestAdmission, type RequestLog } from './request-admission.js';
import { resolveRoute } from './request-path.js';
import { handleResource } from './resource-handler.js';
import type { ResourceRegistry, ResourceType } from './resource-registry.js';
import type { ServerContext } from './server-context.js';
import { errors, StatusError } from './status.js';
import { DEFAULT_STREAM_CREATION_TIMEOUT_MS } from './streams/command-spdy.js';
import { PodRuntimes } from './streams/pod-runtime.js';
import { type PodPortTarget, PortForwarder } from './streams/port-forward.js';
import { type StreamSession, StreamSessions } from './streams/stream-sessions.js';
import type { StreamContext } from './streams/stream-upgrade.js';
import { upgradeListener } from './streams/upgrade-listener.js';

export type { FaultAction, FaultHook, FaultRequest, RequestLog } from './request-admission.js';

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
  /** How long a SPDY client has to open the streams of an exec, attach or forwarded connection (default 30 s). */
  streamCreationTimeoutMs?: number | undefined;
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
  /** Requests held open by a `hang` or `stallBody` fault whose client has not gone away. */
  heldRequests(): number;
  /** Every exec, attach and port-forward session served, oldest first (the last 1000). */
  streamSessions(): readonly StreamSession[];
  /** Exec, attach and port-forward sessions still open. */
  activeStreamSessions(): number;
  /**
   * Routes port `port` of a pod to a TCP listener of the test's (undefined removes the route).
   * Without a route, the ports the pod's containers declare answer with the built-in HTTP server.
   */
  forwardPodPort(namespace: string, pod: string, port: number, target: PodPortTarget | undefined): void;
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

  const admission = new RequestAdmission({
    token: options.token,
    tokenUser,
    authRequired: options.token !== undefined || options.tls?.clientCa !== undefined,
    strict,
    rbac,
    maxRequestLog: options.maxRequestLog ?? 10_000,
    latencyMs: options.latencyMs ?? 0,
    fault: options.fault,
  });
  const requests = admission.requests;
  const aggregated = options.aggregatedDiscovery ?? true;
  const hung = new Set<ServerResponse>();
  const hungSockets = new Set<Duplex>();
  let address = '';
  const forwarder = new PortForwarder();
  const runtimes = new PodRuntimes(store, logs, (uid) => forwarder.http.forget(uid));
  const sessions = new StreamSessions();
  const streams: StreamContext = {
    api,
    rbac,
    gitVersion: ctx.gitVersion,
    runtimes,
    forwarder,
    sessions,
    streamCreationTimeoutMs: options.streamCreationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS,
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const { url, entry, user } = admission.begin(req);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    try {
      const admitted = await admission.admit(req, url, user);
      if (typeof admitted !== 'string') {
        if ('hang' in admitted || 'stallBody' in admitted) {
          if ('stallBody' in admitted) {
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.write(admitted.stallBody);
          }
          hung.add(res);
          res.on('close', () => hung.delete(res));
        } else if ('destroy' in admitted) req.socket.destroy();
        else {
          const body = admitted.body ?? errors.internal('injected fault').toStatus();
          res.writeHead(admitted.status, { 'Content-Type': 'application/json', ...admitted.headers });
          res.end(typeof body === 'string' ? body : JSON.stringify(body));
        }
        return;
      }
      const route = resolveRoute(registry, url.pathname);
      if (route.kind === 'resource') await handleResource(ctx, req, res, route, url.searchParams, admitted);
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
  // exec, attach and port-forward: WebSocket or SPDY/3.1 upgrades (see streams/).
  server.on(
    'upgrade',
    upgradeListener({ admission, registry, streams, servePlain: listener, hung: hungSockets }),
  );

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
    heldRequests: () => hung.size,
    streamSessions: () => sessions.list(),
    activeStreamSessions: () => sessions.activeCount(),
    forwardPodPort: (namespace, pod, port, target) => forwarder.setTarget(namespace, pod, port, target),
    kubeconfig,
    async writeKubeconfig(path, opts) {
      await writeFile(path, kubeconfig(opts), { mode: 0o600 });
      return path;
    },
    addCustomResource: (opts) => addCustomResource(registry, opts),
    setLatency(ms) {
      admission.latencyMs = ms;
    },
    setFault(hook) {
      admission.fault = hook;
    },
    setRbac: (user, rules) => rbac.set(user, rules),
    async close() {
      for (const res of [...ctx.watches, ...ctx.logFollowers]) res.end();
      for (const res of hung) res.destroy();
      for (const socket of hungSockets) socket.destroy();
      sessions.closeAll();
      runtimes.close();
      await forwarder.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
