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

/** `/healthz`, `/readyz` and `/metrics` on plain node:http, on one or two ports. */
export function createOpsServer(opts: OpsServerOptions): OpsServer {
  const timeout = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const readiness = new HealthChecks(timeout);
  const liveness = new HealthChecks(timeout);
  const log = opts.logger;
  let shuttingDown = false;
  let lastReady: boolean | undefined;
  let servers: Server[] | undefined;

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(body)}\n`);
  };

  const noteReadiness = (report: CheckReport) => {
    // Log transitions only: probes arrive every few seconds.
    if (report.ok === lastReady) return;
    lastReady = report.ok;
    if (report.ok) log.info({ checks: report.checks }, 'ready');
    else log.warn({ checks: failing(report) }, 'not ready');
  };

  const handlers: Record<Route, (res: ServerResponse) => Promise<void>> = {
    '/healthz': async (res) => {
      const report = await liveness.run();
      if (report.ok) send(res, 200, 'text/plain; charset=utf-8', 'ok');
      else sendJson(res, 503, { status: 'unhealthy', checks: report.checks });
    },
    '/readyz': async (res) => {
      if (shuttingDown) {
        sendJson(res, 503, { status: 'shutting down', checks: {} });
        return;
      }
      const report = await readiness.run();
      if (!shuttingDown) noteReadiness(report);
      const ok = report.ok && !shuttingDown;
      sendJson(res, ok ? 200 : 503, {
        status: ok ? 'ready' : shuttingDown ? 'shutting down' : 'not ready',
        checks: report.checks,
      });
    },
    '/metrics': async (res) => {
      send(res, 200, opts.registry.contentType, await opts.registry.metrics());
    },
  };

  const handlerFor = (routes: readonly Route[]) => (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as Route;
    if (!routes.includes(path)) {
      send(res, 404, 'text/plain; charset=utf-8', 'not found');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
      return;
    }
    handlers[path](res).catch((err: unknown) => {
      log.error({ err, path }, 'ops endpoint failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error');
      else res.destroy();
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
      servers = plan.map(([, routes]) => createServer(handlerFor(routes)));
      try {
        const ports = await Promise.all(servers.map((s, i) => bind(s, opts.host, plan[i]?.[0] ?? 0)));
        const address = { healthzPort: ports[0] ?? 0, metricsPort: ports[single ? 0 : 1] ?? 0 };
        log.info({ host: opts.host ?? '*', ...address }, 'ops server listening');
        return address;
      } catch (err) {
        await closeAll(servers);
        servers = undefined;
        throw err;
      }
    },
    async close() {
      if (!servers) return;
      const closing = servers;
      servers = undefined;
      await closeAll(closing);
    },
  };
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
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

function closeAll(servers: readonly Server[]): Promise<void> {
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (!s.listening) {
            resolve();
            return;
          }
          s.close(() => resolve());
          // Probe clients keep connections alive; don't let them hold up shutdown.
          s.closeAllConnections();
        }),
    ),
  ).then(() => undefined);
}
