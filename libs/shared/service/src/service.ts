import type { Tracer } from '@opentelemetry/api';
import {
  createOpsServer,
  type HealthCheck,
  type OpsServer,
  type OpsServerAddress,
} from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** A service built in its lib: what a main runs, and what the single-process mode composes. */
export interface Service {
  /** Opens its listeners and connections; rejects when it cannot serve. */
  start(): Promise<void>;
  /** Drains what is in flight and closes everything it opened. */
  stop(): Promise<void>;
  /** Re-reads what can change while it runs (certificates, keys, maps): SIGHUP. */
  reload(): Promise<void>;
}

/** What every service is given by whoever runs it. */
export interface ServiceDeps {
  logger: Logger;
  registry: Registry;
  /** Set when traces are exported (`--otlp-address`). */
  tracer?: Tracer | undefined;
  /**
   * Ops endpoints shared by several services in one process (single-process mode): the service
   * registers its checks there, under its name, and neither opens nor closes them. Without
   * it, the service serves its own on its `--healthz-port` and `--metrics-port`.
   */
  ops?: OpsServer | undefined;
}

/** The ports of a service's own ops endpoints. */
export interface OpsFlags {
  readonly healthzPort: number;
  readonly metricsPort: number;
}

/** A service's ops endpoints: its own, or a shared one it only adds checks to. */
export interface ServiceOps {
  /** The endpoints the service's checks are on. */
  readonly server: OpsServer;
  addReadinessCheck(name: string, check: HealthCheck): () => void;
  addLivenessCheck(name: string, check: HealthCheck): () => void;
  /** Opens its own endpoints (first thing at start): their ports; undefined when shared. */
  open(): Promise<OpsServerAddress | undefined>;
  /** Turns its own readiness off (first thing at stop). */
  markShuttingDown(): void;
  /** Closes its own endpoints (last thing at stop). */
  close(): Promise<void>;
}

/**
 * The ops endpoints of service `name`: `deps.ops` when shared (its checks named
 * `<name>/<check>`, as several services of one process each have a `bus` check), else its own
 * on all interfaces at the flags' ports.
 */
export function serviceOps(
  name: string,
  flags: OpsFlags,
  deps: Pick<ServiceDeps, 'logger' | 'registry' | 'ops'>,
): ServiceOps {
  const shared = deps.ops;
  if (shared) {
    return {
      server: shared,
      addReadinessCheck: (check, fn) => shared.addReadinessCheck(`${name}/${check}`, fn),
      addLivenessCheck: (check, fn) => shared.addLivenessCheck(`${name}/${check}`, fn),
      open: async () => undefined,
      markShuttingDown: () => {},
      close: async () => {},
    };
  }
  const own = createOpsServer({
    host: '0.0.0.0',
    healthzPort: flags.healthzPort,
    metricsPort: flags.metricsPort,
    registry: deps.registry,
    logger: deps.logger,
  });
  return {
    server: own,
    addReadinessCheck: (check, fn) => own.addReadinessCheck(check, fn),
    addLivenessCheck: (check, fn) => own.addLivenessCheck(check, fn),
    open: () => own.listen(),
    markShuttingDown: () => own.markShuttingDown(),
    close: () => own.close(),
  };
}
