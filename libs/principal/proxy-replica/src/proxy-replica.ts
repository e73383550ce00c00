import { type Bus, connectBusFromFlags, type NatsFlags } from '@pullplane/bus';
import type { AgentRouter, LocalGateway } from '@pullplane/router';
import { type OpsFlags, type ServiceDeps, serviceOps } from '@pullplane/service';
import { getOrCreateGauge, type OpsServer } from '@pullplane/telemetry';
import type { Registry } from 'prom-client';
import { type GatewayClientFlags, type GatewayLinkFlags, startRouterFromFlags } from './router-from-flags.js';

/** A front-end server (resource proxy, redis proxy) that a replica runs. */
export interface ListeningProxy {
  readonly port: number;
  listen(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

export interface ProxyReplicaFlags extends GatewayClientFlags, GatewayLinkFlags, NatsFlags, OpsFlags {
  requestTimeout: number;
  drainTimeout: number;
}

export interface ProxyReplicaDeps extends ServiceDeps {
  /** Service name (NATS connection name, ops checks' prefix when they are shared). */
  name: string;
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus | undefined;
  /**
   * The gateway of this very process (single-process mode): agents it holds are reached
   * without a network hop. Asked for when the replica starts, after the gateway has.
   */
  localGateway?: (() => LocalGateway) | undefined;
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
  const ops = serviceOps(deps.name, c, deps);
  let bus = deps.bus;
  let router: AgentRouter | undefined;
  let proxy: P | undefined;
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));
  ops.addReadinessCheck('listener', () => (proxy ? true : 'not listening yet'));
  return {
    ops: ops.server,
    get proxy() {
      return proxy;
    },
    get router() {
      return router;
    },
    async start() {
      await ops.open();
      // Proxies only read presence and revocations: they create no bucket.
      bus ??= await connectBusFromFlags(c, { name: deps.name, logger, creates: [] });
      const local = deps.localGateway?.();
      router = await startRouterFromFlags(c, { bus, logger, registry, ...(local ? { local } : {}) });
      const routing = router;
      countKnownAgents(registry, deps.name, () => routing.agents().length);
      const built = await build(router, bus);
      await built.listen();
      proxy = built;
      logger.info({ port: built.port, ...describe(built) }, `${deps.name} started`);
    },
    async stop() {
      ops.markShuttingDown();
      await proxy?.close(c.drainTimeout);
      router?.stop();
      if (!deps.bus) await bus?.close();
      await ops.close();
    },
  };
}
