import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { Pool } from 'undici';
import {
  type BackendCall,
  type BackendCallHandler,
  type BackendResponse,
  dispatchCall,
} from './backend-call.js';

export interface KubeRequest {
  method: string;
  /** Path and query, relative to the cluster's API root. */
  path: string;
  headers: Record<string, string | string[]>;
}

/** TLS settings client-node derives from the kubeconfig (files re-read on each refresh). */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized'] as const;
type TlsSettings = Pick<https.RequestOptions, (typeof TLS_KEYS)[number]>;

interface Prepared {
  tls: TlsSettings;
  /** Keep-alive agent built with `tls`, for upgrades (exec, attach, port-forward). */
  agent: http.Agent;
  /** Kept-alive connections built with `tls` for every other request: the connections carry the credentials. */
  pool: Pool;
  /** Authorization (and Impersonate-User) as the kubeconfig's user asks. */
  headers: Record<string, string>;
  /** user:password for basic auth (node:http's `auth`). */
  auth?: string;
  /** `headers` with basic auth as its Authorization header: what `call` sends. */
  callHeaders: Record<string, string>;
}

export interface KubeClientOptions {
  maxSockets?: number;
  /**
   * How often the credentials are prepared again (CA, client certificate and key re-read
   * from their files, the token re-read by client-node): rotation shows within this time.
   * Default 10 s; 0 prepares only on start and after a 401.
   */
  refreshMs?: number;
  /** Told when a refresh fails (the previous credentials stay in use). */
  onRefreshError?: (err: unknown) => void;
}

const sameValue = (a: unknown, b: unknown) =>
  Buffer.isBuffer(a) && Buffer.isBuffer(b) ? a.equals(b) : a === b;

/**
 * A thin client for the local API server with connection reuse. The request options
 * client-node derives from the kubeconfig (CA, client certificate and key read from disk, an
 * https.Agent, the Authorization header) are prepared once and again every `refreshMs` and
 * after a 401, not per request; a changed CA or client certificate gets a new keep-alive agent
 * (the old one's connections close as their requests finish). Users whose credentials come
 * from an exec plugin or an auth provider (other than in-cluster's token file) still get their
 * Authorization header per request, as client-node caches and renews those itself.
 */
export class KubeClient {
  private readonly base: URL;
  private readonly basePath: string;
  /** The URL's host without IPv6 brackets: node:http looks `[fd00::1]` up as a name and fails. */
  private readonly hostname: string;
  private readonly isHttps: boolean;
  private readonly maxSockets: number;
  private readonly perRequestAuth: boolean;
  private prepared: Prepared | undefined;
  private preparing: Promise<Prepared> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** How many times the credentials were prepared (tests, metrics). */
  preparations = 0;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly options: KubeClientOptions = {},
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.base = new URL(cluster.server);
    this.basePath = this.base.pathname.replace(/\/$/, '');
    this.hostname = this.base.hostname.replace(/^\[|\]$/g, '');
    this.isHttps = this.base.protocol === 'https:';
    this.maxSockets = options.maxSockets ?? 256;
    const user = kubeConfig.getCurrentUser();
    this.perRequestAuth = Boolean(
      user?.exec || (user?.authProvider && user.authProvider.name !== 'tokenFile'),
    );
  }

  /** Prepares the credentials again every `refreshMs` while the client is in use (from its first request until close). */
  private keepRefreshing(): void {
    const every = this.options.refreshMs ?? 10_000;
    if (every <= 0 || this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.refresh().catch((err: unknown) => this.options.onRefreshError?.(err));
    }, every);
    this.timer.unref();
  }

  /** Prepares the credentials again now (rotation); requests meanwhile use the previous ones. */
  async refresh(): Promise<void> {
    await this.prepare();
  }

  /**
   * Stops the refresh timer and closes the kept-alive connections. A request after this
   * prepares the credentials again (an agent restarted in the same process reuses its client).
   */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    const p = this.prepared;
    this.prepared = undefined;
    p?.agent.destroy();
    p?.pool.destroy().catch(() => undefined);
  }

  /**
   * Starts an upgrade (exec, attach, port-forward) over node:http: the caller writes the body
   * (if any) and takes the response or the upgraded socket.
   */
  async request(req: KubeRequest, onResponse: (res: IncomingMessage) => void): Promise<http.ClientRequest> {
    const p = this.prepared ?? (await this.prepare());
    const options: https.RequestOptions = {
      protocol: this.base.protocol,
      hostname: this.hostname,
      port: this.base.port || (this.isHttps ? 443 : 80),
      method: req.method,
      path: this.basePath + req.path,
      headers: { ...req.headers, ...p.headers, ...(await this.perRequestHeaders()) },
      agent: p.agent,
      ...(p.auth ? { auth: p.auth } : {}),
    };
    return (this.isHttps ? https : http).request(options, (res) => {
      if (res.statusCode === 401) this.refused();
      onResponse(res);
    });
  }

  /**
   * Sends a request on a kept-alive connection (undici's, `dispatchCall`) and hands its
   * response to `handler` as it arrives. `body` is the whole body, or a stream read to its end
   * (and then destroyed: never pass a stream whose other side is still in use). `onResend`
   * (see `CallHooks`) is only for requests with no body and no effect.
   */
  async call(
    req: KubeRequest,
    body: Buffer | Readable | undefined,
    handler: BackendCallHandler,
    onResend?: (err: Error) => void,
  ): Promise<BackendCall> {
    const p = this.prepared ?? (await this.prepare());
    const headers: Record<string, string | string[]> = { ...req.headers, ...p.callHeaders };
    // Only an exec plugin or auth provider costs a wait per request.
    if (this.perRequestAuth) Object.assign(headers, await this.perRequestHeaders());
    return dispatchCall(
      p.pool,
      { path: this.basePath + req.path, method: req.method, headers, body: body ?? null },
      handler,
      {
        onStatus: (status) => {
          if (status === 401) this.refused();
        },
        ...(onResend ? { onResend } : {}),
      },
    );
  }

  /** Authorization from an exec plugin or auth provider: client-node caches and renews it, asked per request. */
  private async perRequestHeaders(): Promise<Record<string, string>> {
    if (!this.perRequestAuth) return {};
    const fresh: https.RequestOptions = { headers: {} };
    await this.kubeConfig.applyToHTTPSOptions(fresh);
    (fresh.agent as http.Agent | undefined)?.destroy();
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(fresh.headers ?? {})) if (typeof v === 'string') out[k] = v;
    return out;
  }

  /** Credentials refused: prepare them again (a rotated token) for the next request. */
  private refused(): void {
    this.refresh().catch((err: unknown) => this.options.onRefreshError?.(err));
  }

  private prepare(): Promise<Prepared> {
    this.preparing ??= this.load().finally(() => {
      this.preparing = undefined;
    });
    return this.preparing;
  }

  private async load(): Promise<Prepared> {
    this.keepRefreshing();
    const probe: https.RequestOptions = { headers: {} };
    await this.kubeConfig.applyToHTTPSOptions(probe);
    // client-node builds an agent per call; the connections are ours to keep.
    (probe.agent as http.Agent | undefined)?.destroy();
    this.preparations++;
    const tls: TlsSettings = {};
    for (const k of TLS_KEYS) if (probe[k] !== undefined) (tls as Record<string, unknown>)[k] = probe[k];
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(probe.headers ?? {})) if (typeof v === 'string') headers[k] = v;
    const previous = this.prepared;
    const sameTls = previous !== undefined && TLS_KEYS.every((k) => sameValue(previous.tls[k], tls[k]));
    const agent = sameTls
      ? previous.agent
      : this.isHttps
        ? new https.Agent({ keepAlive: true, maxSockets: this.maxSockets, ...tls })
        : new http.Agent({ keepAlive: true, maxSockets: this.maxSockets });
    const pool = sameTls
      ? previous.pool
      : new Pool(this.base.origin, {
          connections: this.maxSockets,
          keepAliveTimeout: 30_000,
          ...(this.isHttps ? { connect: { ...tls } } : {}),
        });
    if (previous && !sameTls) {
      retire(previous.agent);
      // Idle connections close now, busy ones once their requests end.
      previous.pool.close().catch(() => undefined);
    }
    const callHeaders = probe.auth
      ? { ...headers, authorization: `Basic ${Buffer.from(probe.auth).toString('base64')}` }
      : headers;
    this.prepared = { tls, agent, pool, headers, callHeaders, ...(probe.auth ? { auth: probe.auth } : {}) };
    return this.prepared;
  }

  /** GETs a JSON document; undefined on 404. Throws on other failures. */
  async getJson(path: string): Promise<unknown> {
    const { status, body } = await this.fetch({
      method: 'GET',
      path,
      headers: { accept: 'application/json' },
    });
    if (status === 404) return undefined;
    const text = body.toString('utf8');
    if (status < 200 || status >= 300) throw new Error(`GET ${path}: ${status} ${text.slice(0, 200)}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`GET ${path}: response is not JSON`);
    }
  }

  /** A request's whole response (small answers: documents, not watches). */
  fetch(req: KubeRequest, body?: Buffer): Promise<BackendResponse & { body: Buffer }> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let head: BackendResponse | undefined;
      this.call(req, body, {
        onResponse: (res) => {
          head = res;
        },
        onData: (c) => chunks.push(c) > 0,
        onEnd: () => resolve({ ...head!, body: Buffer.concat(chunks) }),
        onError: reject,
      }).catch(reject);
    });
  }
}

/** An agent replaced by one with new credentials: idle connections close now, busy ones when their request ends. */
function retire(agent: http.Agent): void {
  agent.on('free', (socket: { destroy(): void }) => socket.destroy());
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
}
