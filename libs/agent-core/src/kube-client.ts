import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeRequest {
  method: string;
  /** Path and query, relative to the cluster's API root. */
  path: string;
  headers: Record<string, string | string[]>;
}

/**
 * A thin client for the local API server with connection reuse: client-node loads the
 * credentials (fresh on every call, so rotated tokens and exec plugins work) and we keep one
 * keep-alive agent, because client-node would otherwise open a connection per request.
 */
export class KubeClient {
  private readonly base: URL;
  private readonly basePath: string;
  private readonly isHttps: boolean;
  private readonly agent: http.Agent;

  constructor(
    private readonly kubeConfig: KubeConfig,
    maxSockets = 256,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.base = new URL(cluster.server);
    this.basePath = this.base.pathname.replace(/\/$/, '');
    this.isHttps = this.base.protocol === 'https:';
    this.agent = this.isHttps
      ? new https.Agent({ keepAlive: true, maxSockets })
      : new http.Agent({ keepAlive: true, maxSockets });
  }

  /** Starts a request; the caller writes the body (if any) and reads the response. */
  async request(req: KubeRequest, onResponse: (res: IncomingMessage) => void): Promise<http.ClientRequest> {
    const options: https.RequestOptions = {
      protocol: this.base.protocol,
      hostname: this.base.hostname,
      port: this.base.port || (this.isHttps ? 443 : 80),
      method: req.method,
      path: this.basePath + req.path,
      headers: req.headers,
    };
    await this.kubeConfig.applyToHTTPSOptions(options);
    options.agent = this.agent;
    return (this.isHttps ? https : http).request(options, onResponse);
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
