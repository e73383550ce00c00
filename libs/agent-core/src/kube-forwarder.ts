import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';

/** Headers that describe one hop, or carry the caller's credentials: never forwarded. */
const STRIPPED_REQUEST = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
  'cookie',
  'content-length',
]);
const STRIPPED_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'trailer',
  'upgrade',
  'set-cookie',
]);

export interface KubeForwarderOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** Upper bound on parallel sockets to the local API server. */
  maxSockets?: number;
}

/**
 * Executes one HTTP-like logical stream against the local Kubernetes API with the
 * credentials @kubernetes/client-node loaded (in-cluster token or kubeconfig). Bodies are
 * piped in both directions, so watches and followed logs stream as they come.
 */
export function createKubeForwarder(opts: KubeForwarderOptions): (stream: LogicalStream) => void {
  const cluster = opts.kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const base = new URL(cluster.server);
  const basePath = base.pathname.replace(/\/$/, '');
  const isHttps = base.protocol === 'https:';
  const agent = isHttps
    ? new https.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 256 })
    : new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 256 });

  return (stream) => {
    const head = stream.open.head;
    if (head.case !== 'http') {
      stream.reset(TunnelErrorCode.REFUSED, `kube forwarder cannot serve ${head.case ?? 'an empty'} request`);
      return;
    }
    const { method, path, headers } = head.value;
    const log = opts.logger.child({ requestId: stream.open.requestId, method, path });
    void (async () => {
      const reqHeaders: Record<string, string | string[]> = {};
      for (const h of headers) {
        const name = h.name.toLowerCase();
        if (STRIPPED_REQUEST.has(name) || name.startsWith('impersonate-')) continue;
        const prev = reqHeaders[name];
        reqHeaders[name] = prev === undefined ? h.value : ([] as string[]).concat(prev, h.value);
      }
      const options: https.RequestOptions = {
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port || (isHttps ? 443 : 80),
        method,
        path: basePath + path,
        headers: reqHeaders,
        agent,
      };
      // Fresh credentials every time (rotated service-account tokens, exec plugins), but our
      // own keep-alive agent: client-node would hand us a new agent, hence a new TCP and TLS
      // connection, per request.
      await opts.kubeConfig.applyToHTTPSOptions(options);
      options.agent = agent;
      let responseComplete = false;
      const req = (isHttps ? https : http).request(options, (res) => {
        res.on('end', () => {
          responseComplete = true;
        });
        const out: Array<{ name: string; value: string }> = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i]!;
          if (!STRIPPED_RESPONSE.has(name.toLowerCase())) out.push({ name, value: res.rawHeaders[i + 1]! });
        }
        stream.respond(res.statusCode ?? 502, out);
        // pipe() rather than pipeline(): this is the hot path, and pipeline allocates an
        // AbortController (and an AbortError on completion) per call.
        res.on('error', (err) => {
          if (!stream.destroyed)
            stream.reset(TunnelErrorCode.INTERNAL, `cluster API stream failed: ${err.message}`);
        });
        res.pipe(stream);
      });
      req.on('error', (err) => {
        if (stream.destroyed) return;
        log.warn({ err: err.message }, 'cluster API request failed');
        stream.reset(TunnelErrorCode.INTERNAL, `cluster API request failed: ${err.message}`);
      });
      // The requester went away (client closed a watch): stop the upstream call too.
      stream.on('close', () => {
        if (!req.destroyed && !responseComplete) req.destroy();
      });
      stream.pipe(req);
    })().catch((err: unknown) => {
      log.error({ err: String(err) }, 'could not prepare cluster API request');
      stream.reset(TunnelErrorCode.INTERNAL, `could not prepare cluster API request: ${String(err)}`);
    });
  };
}
