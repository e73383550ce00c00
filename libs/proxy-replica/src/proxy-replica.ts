import { type Bus, connectBusFromFlags } from '@pullplane/bus';
import type { AgentRouter } from '@pullplane/router';
import { createOpsServer, getOrCreateGauge, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type GatewayClientFlags, startRouterFromFlags } from './router-from-flags.js';

/** A front-end server (resource proxy, redis proxy) that a replica runs. */
export interface ListeningProxy {
  readonly port: number;
  listen(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

export interface ProxyReplicaFlags extends GatewayClientFlags {
  natsUrl: string;
  presenceReplicas: number;
  requestTimeout: number;
  drainTimeout: number;
  healthzPort: number;
  metricsPort: number;
}

export interface ProxyReplicaDeps {
  /** Service name (NATS connection name). */
  name: string;
  logger: Logger;
  registry: Registry;
  /** Overrides the NATS connection (tests, single-process mode); left open on stop. */
  bus?: Bus | undefined;
  /**
   * A router already started (single-process mode: to a gateway in the same process); used
   * instead of one to the gateways from the flags, and left running on stop.
   */
  router?: AgentRouter | undefined;
  /**
   * An ops server owned elsewhere (several services in one process): the replica adds its
   * readiness checks, named after it, and neither starts nor closes it.
   */
  ops?: OpsServer | undefined;
}

export interface ProxyReplica<P extends ListeningProxy> {
  readonly ops: OpsServer;
  readonly proxy: P | undefined;
  readonly router: AgentRouter | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Per registry (the single-process mode shares one), each replica's count of agents it can route to. */
const knownAgentCounts = new WeakMap<Registry, Map<string, () => number>>();

/**
 * `pullplane_proxy_known_agents{proxy}`: agents in this replica's routing table, fed by the
 * presence watch. Below the gateways' connected count, a replica is not seeing presence.
 */
function countKnownAgents(registry: Registry, proxy: string, count: () => number): void {
  let counts = knownAgentCounts.get(registry);
  if (!counts) {
    const perProxy = new Map<string, () => number>();
    counts = perProxy;
    knownAgentCounts.set(registry, perProxy);
    getOrCreateGauge(registry, {
      name: 'proxy_known_agents',
      help: "Agents in this replica's routing table (from presence), by proxy",
      labelNames: ['proxy'],
      collect() {
        for (const [name, n] of perProxy) this.set({ proxy: name }, n());
      },
    });
  }
  counts.set(proxy, count);
}

/**
 * The lifecycle both proxies share: health and metrics, the presence bus, a router to the
 * gateways, then the proxy itself; stopped in reverse with a drain for in-flight requests.
 */
export function createProxyReplica<P extends ListeningProxy>(
  c: ProxyReplicaFlags,
  deps: ProxyReplicaDeps,
  /** Builds the front-end server; `bus` also carries revocations and control events. */
  build: (router: AgentRouter, bus: Bus) => P | Promise<P>,
  /** Extra fields for the "started" log line. */
  describe: (proxy: P) => Record<string, unknown> = () => ({}),
): ProxyReplica<P> {
  const { logger, registry } = deps;
  const ownOps = !deps.ops;
  const ops =
    deps.ops ??
    createOpsServer({
      host: '0.0.0.0',
      healthzPort: c.healthzPort,
      metricsPort: c.metricsPort,
      registry,
      logger,
    });
  let bus = deps.bus;
  let router = deps.router;
  let proxy: P | undefined;
  const check = (what: string) => (ownOps ? what : `${deps.name} ${what}`);
  ops.addReadinessCheck(check('bus'), () => (bus?.status === 'connected' ? true : 'not connected to NATS'));
  ops.addReadinessCheck(check('listener'), () => (proxy ? true : 'not listening yet'));
  return {
    ops,
    get proxy() {
      return proxy;
    },
    get router() {
      return router;
    },
    async start() {
      if (ownOps) await ops.listen();
      bus ??= await connectBusFromFlags(c, { name: deps.name, logger });
      router ??= await startRouterFromFlags(c, { bus, logger, registry });
      const routing = router;
      countKnownAgents(registry, deps.name, () => routing.agents().length);
      const built = await build(router, bus);
      await built.listen();
      proxy = built;
      logger.info({ port: built.port, ...describe(built) }, `${deps.name} started`);
    },
    async stop() {
      if (ownOps) ops.markShuttingDown();
      await proxy?.close(c.drainTimeout);
      if (!deps.router) router?.stop();
      if (!deps.bus) await bus?.close();
      if (ownOps) await ops.close();
    },
  };
}
