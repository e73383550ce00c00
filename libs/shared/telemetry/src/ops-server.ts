import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { OpsServerStateError } from './errors.js';
import {
  type CheckReport,
  DEFAULT_CHECK_TIMEOUT_MS,
  type HealthCheck,
  HealthChecks,
} from './health-checks.js';

export interface OpsServerOptions {
  /** Interface to bind; all interfaces when omitted. */
  readonly host?: string;
  /** Serves `/healthz` and `/readyz`; 0 picks a free port. */
  readonly healthzPort: number;
  /** Serves `/metrics`; equal to `healthzPort` means one listener serves everything. */
  readonly metricsPort: number;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Per-check timeout; a check that takes longer counts as failed. */
  readonly checkTimeoutMs?: number;
}

export interface OpsServerAddress {
  readonly healthzPort: number;
  readonly metricsPort: number;
}

export interface OpsServer {
  /** `/readyz` passes only while every readiness check passes. Returns a remover. */
  addReadinessCheck(name: string, check: HealthCheck): () => void;
  /** `/healthz` fails when a liveness check fails (for detecting a wedged component). */
  addLivenessCheck(name: string, check: HealthCheck): () => void;
  /** Fails `/readyz` at once so Kubernetes stops routing traffic while the app drains. */
  markShuttingDown(): void;
  readonly shuttingDown: boolean;
  /** Binds the listener(s) and resolves the actual ports. */
  listen(): Promise<OpsServerAddress>;
  close(): Promise<void>;
}

type Route = '/healthz' | '/readyz' | '/metrics';
interface Answer {
  status: number;
  type: string;
  body: string;
}
const TEXT = 'text/plain; charset=utf-8';

/**
 * `/healthz`, `/readyz` and `/metrics` on one or two ports, served by node:http: three fixed
 * routes need no framework, and fastify cost every process several MiB of resident memory.
 */
export function createOpsServer(opts: OpsServerOptions): OpsServer {
  const timeout = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const readiness = new HealthChecks(timeout);
  const liveness = new HealthChecks(timeout);
  const log = opts.logger;
  let shuttingDown = false;
  let lastReady: boolean | undefined;
  let servers: Server[] | undefined;

  const json = (status: number, body: unknown): Answer => ({
    status,
    type: 'application/json; charset=utf-8',
    body: `${JSON.stringify(body)}\n`,
  });

  const noteReadiness = (report: CheckReport) => {
    // Log transitions only: probes arrive every few seconds.
    if (report.ok === lastReady) return;
    lastReady = report.ok;
    if (report.ok) log.info({ checks: report.checks }, 'ready');
    else log.warn({ checks: failing(report) }, 'not ready');
  };

  const handlers: Record<Route, () => Promise<Answer>> = {
    '/healthz': async () => {
      const report = await liveness.run();
      return report.ok
        ? { status: 200, type: TEXT, body: 'ok' }
        : json(503, { status: 'unhealthy', checks: report.checks });
    },
    '/readyz': async () => {
      if (shuttingDown) return json(503, { status: 'shutting down', checks: {} });
      const report = await readiness.run();
      if (!shuttingDown) noteReadiness(report);
      const ok = report.ok && !shuttingDown;
      return json(ok ? 200 : 503, {
        status: ok ? 'ready' : shuttingDown ? 'shutting down' : 'not ready',
        checks: report.checks,
      });
    },
    '/metrics': async () => ({
      status: 200,
      type: opts.registry.contentType,
      body: await opts.registry.metrics(),
    }),
  };

  const build = (routes: readonly Route[]): Server => {
    const served = new Set<string>(routes);
    const reply = (res: ServerResponse, a: Answer, extra: Record<string, string> = {}, head = false) => {
      res.writeHead(a.status, {
        'content-type': a.type,
        'content-length': Buffer.byteLength(a.body),
        'cache-control': 'no-store',
        ...extra,
      });
      res.end(head ? undefined : a.body);
    };
    const serve = async (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '/').split('?', 1)[0]!;
      if (!served.has(path)) return reply(res, { status: 404, type: TEXT, body: 'not found' });
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return reply(res, { status: 405, type: TEXT, body: 'method not allowed' }, { allow: 'GET, HEAD' });
      // HEAD answers with GET's headers and no body.
      reply(res, await handlers[path as Route](), {}, req.method === 'HEAD');
    };
    return createServer((req, res) => {
      serve(req, res).catch((err: unknown) => {
        log.error({ err, path: req.url }, 'ops endpoint failed');
        if (!res.headersSent) reply(res, { status: 500, type: TEXT, body: 'internal error' });
        else res.destroy();
      });
      // Probes send no body; whatever comes is read and dropped.
      req.resume();
    });
  };

  return {
    addReadinessCheck: (name, check) => readiness.add(name, check),
    addLivenessCheck: (name, check) => liveness.add(name, check),
    markShuttingDown() {
      if (shuttingDown) return;
      shuttingDown = true;
      log.info('readiness off: shutting down');
    },
    get shuttingDown() {
      return shuttingDown;
    },
    async listen() {
      if (servers) throw new OpsServerStateError('ops server is already listening');
      const single = opts.healthzPort === opts.metricsPort;
      const plan: [number, readonly Route[]][] = single
        ? [[opts.healthzPort, ['/healthz', '/readyz', '/metrics']]]
        : [
            [opts.healthzPort, ['/healthz', '/readyz']],
            [opts.metricsPort, ['/metrics']],
          ];
      const started = plan.map(([, routes]) => build(routes));
      servers = started;
      try {
        const ports = await Promise.all(
          // node's own binding rules (all interfaces, IPv4 and IPv6, when no host is given).
          started.map((server, i) => bind(server, opts.host, plan[i]?.[0] ?? 0)),
        );
        const address = { healthzPort: ports[0] ?? 0, metricsPort: ports[single ? 0 : 1] ?? 0 };
        log.info({ host: opts.host ?? '*', ...address }, 'ops server listening');
        return address;
      } catch (err) {
        await Promise.all(started.map(closeServer));
        servers = undefined;
        throw err;
      }
    },
    async close() {
      if (!servers) return;
      const closing = servers;
      servers = undefined;
      await Promise.all(closing.map(closeServer));
    },
  };
}

function failing(report: CheckReport): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, r] of Object.entries(report.checks)) if (!r.ok) out[name] = r.message;
  return out;
}

function bind(server: Server, host: string | undefined, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, ...(host ? { host } : {}) }, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops listening; probe clients keep connections alive, and they must not hold up shutdown. */
async function closeServer(server: Server): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
