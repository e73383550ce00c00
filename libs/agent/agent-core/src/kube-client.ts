import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

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
  /** Keep-alive agent built with `tls`: the connections carry the credentials. */
  agent: http.Agent;
  /** Authorization (and Impersonate-User) as the kubeconfig's user asks. */
  headers: Record<string, string>;
  /** user:password for basic auth. */
  auth?: string;
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
    const every = options.refreshMs ?? 10_000;
    if (every > 0) {
      this.timer = setInterval(() => {
        this.refresh().catch((err: unknown) => options.onRefreshError?.(err));
      }, every);
      this.timer.unref();
    }
  }

  /** Prepares the credentials again now (rotation); requests meanwhile use the previous ones. */
  async refresh(): Promise<void> {
    await this.prepare();
  }

  /** Stops the refresh timer and closes the kept-alive connections. */
  close(): void {
    clearInterval(this.timer);
    this.prepared?.agent.destroy();
  }

  /** Starts a request; the caller writes the body (if any) and reads the response. */
  async request(req: KubeRequest, onResponse: (res: IncomingMessage) => void): Promise<http.ClientRequest> {
    const p = this.prepared ?? (await this.prepare());
    const options: https.RequestOptions = {
      protocol: this.base.protocol,
      hostname: this.hostname,
      port: this.base.port || (this.isHttps ? 443 : 80),
      method: req.method,
      path: this.basePath + req.path,
      headers: { ...req.headers, ...p.headers },
      agent: p.agent,
      ...(p.auth ? { auth: p.auth } : {}),
    };
    if (this.perRequestAuth) {
      const fresh: https.RequestOptions = { headers: {} };
      await this.kubeConfig.applyToHTTPSOptions(fresh);
      (fresh.agent as http.Agent | undefined)?.destroy();
      Object.assign(options.headers as object, fresh.headers);
    }
    return (this.isHttps ? https : http).request(options, (res) => {
      // Credentials refused: prepare them again (a rotated token) for the next request.
      if (res.statusCode === 401) this.refresh().catch((err: unknown) => this.options.onRefreshError?.(err));
      onResponse(res);
    });
  }

  private prepare(): Promise<Prepared> {
    this.preparing ??= this.load().finally(() => {
      this.preparing = undefined;
    });
    return this.preparing;
  }

  private async load(): Promise<Prepared> {
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
    if (previous && !sameTls) retire(previous.agent);
    this.prepared = { tls, agent, headers, ...(probe.auth ? { auth: probe.auth } : {}) };
    return this.prepared;
  }

  /** GETs a JSON document; undefined on 404. Throws on other failures. */
  async getJson(path: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.request({ method: 'GET', path, headers: { accept: 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status === 404) return resolve(undefined);
          const text = Buffer.concat(chunks).toString('utf8');
          if (status < 200 || status >= 300) {
            return reject(new Error(`GET ${path}: ${status} ${text.slice(0, 200)}`));
          }
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error(`GET ${path}: response is not JSON`));
          }
        });
      })
        .then((r) => {
          r.on('error', reject);
          r.end();
        })
        .catch(reject);
    });
  }
}

/** An agent replaced by one with new credentials: idle connections close now, busy ones when their request ends. */
function retire(agent: http.Agent): void {
  agent.on('free', (socket: { destroy(): void }) => socket.destroy());
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
}
