import type { Metadata } from '@grpc/grpc-js';
import type { Bus, PresenceRecord } from '@pullplane/bus';
import type { FrameClient, TunnelCredentials } from '@pullplane/grpc-frames';
import { type Open, type OpenMessageInit, openMessage } from '@pullplane/proto';
import {
  DEFAULT_SESSION_WINDOW_BUDGET,
  Deadline,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
  WindowBudget,
} from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { agentNotConnected } from './errors.js';
import { GatewayLink, gatewayClient } from './gateway-link.js';
import { LinkPool } from './link-pool.js';
import { LinkStream, type Route } from './link-stream.js';
import { RouteTable } from './route-table.js';

/** A gateway in this very process (single-process mode): no network hop. */
export interface LocalGateway {
  readonly gatewayId: string;
  openLocal(agent: string, open: Open): TunnelStream;
}

export interface AgentRouterOptions {
  bus: Bus;
  logger: Logger;
  /** Credentials towards gateways' internal listeners (mTLS, or insecure behind a mesh). */
  credentials: TunnelCredentials;
  /** Extra metadata on every link (e.g. a token for the internal listener). */
  metadata?: () => Metadata;
  local?: LocalGateway;
  /** How long an open without a deadline of its own may spend finding the agent across stale routes. */
  routeTimeoutMs?: number;
  /**
   * Name to verify in gateways' certificates: they are dialled by pod IP, so a certificate
   * naming the internal Service (not each IP) needs this override.
   */
  serverNameOverride?: string;
  maxChunkSize?: number;
  /** Persistent links kept to each gateway. Default 2. */
  linksPerGateway?: number;
  /**
   * Links older than this take no new streams (the next is dialled, reading `metadata` again)
   * and close when their streams are done. Default 0: links live as long as they work.
   */
  linkMaxAgeMs?: number;
  /** Heartbeat on each link; one left unanswered until the next closes the link. Default 10 s. */
  linkPingIntervalMs?: number;
  /**
   * A request that heard nothing back by its deadline has its link probed: a ping unanswered
   * within this long closes the link (a paused or partitioned gateway), so it is dialled again
   * rather than held until the heartbeat notices. Default 2 s.
   */
  linkProbeTimeoutMs?: number;
  /**
   * How often the routing table is compared with the presence store, which drops routes whose
   * records expired (expiry produces no watch event). Default 30 s; 0: never.
   */
  reconcileIntervalMs?: number;
  /**
   * Response bytes every link of this router may hold for readers together (what arrived and was
   * not read yet, up to each stream's credit window): a stream whose data would take them past
   * it is reset alone, and window growth is reserved in it. Default 64 MiB.
   */
  linkBufferBudgetBytes?: number;
  /** Where the router's metrics go. */
  registry?: Registry;
}

export interface RouteOpenInit extends Omit<OpenMessageInit, 'agent' | 'timeoutMs'> {
  /**
   * The request's deadline, made where the request came in: the router looks for the agent
   * until then, and the agent must answer by then (the Open carries what is left of it). Without
   * one, the router's `routeTimeoutMs` bounds routing and the agent has no deadline.
   */
  deadline?: Deadline;
  /**
   * The deadline bounds finding the agent only, not its answer: for streams whose response head
   * may come late (watches, followed logs).
   */
  routeOnly?: boolean;
}

/**
 * The Open a route init stands for, for `agent`: `timeoutMs` is what is left of its deadline, if
 * it bounds the answer. Built field by field, once per request (object rest and spread copy
 * through a runtime call each, three of them here before): the type of `open` fails the build
 * when the Open gains a field this does not carry.
 */
export function openInitOf(init: RouteOpenInit, agent = ''): OpenMessageInit {
  const deadline = init.deadline;
  const open: { [K in keyof Required<OpenMessageInit>]: OpenMessageInit[K] | undefined } = {
    head: init.head,
    agent,
    requestId: init.requestId,
    hasBody: init.hasBody,
    body: init.body,
    timeoutMs: deadline && !init.routeOnly ? deadline.openTimeoutMs() : undefined,
    traceparent: init.traceparent,
    tracestate: init.tracestate,
  };
  // A field left undefined reads as absent to `openMessage` (each has its default there).
  return open as OpenMessageInit;
}

/**
 * A request whose link was lost under it is sent again at most this often: a link that keeps
 * failing under the same request (whatever the agent answers kills it) must not take one link
 * after another down with it.
 */
const MAX_RESENDS_AFTER_LOST_LINK = 1;

interface RouterMetrics {
  linksOpen: Gauge;
  linkRedials: Counter;
  routesDropped: Counter<'how'>;
  buffered: Gauge;
  overBudget: Counter;
}

function routerMetrics(
  registry: Registry | undefined,
  open: () => number,
  budget: WindowBudget,
): RouterMetrics | undefined {
  if (!registry) return undefined;
  const gaugeName = 'pullplane_router_gateway_links_open';
  const redialName = 'pullplane_router_gateway_link_redials_total';
  const droppedName = 'pullplane_router_stale_routes_dropped_total';
  const bufferedName = 'pullplane_router_link_buffered_bytes';
  const overName = 'pullplane_router_link_budget_resets_total';
  return {
    linksOpen:
      (registry.getSingleMetric(gaugeName) as Gauge | undefined) ??
      new Gauge({
        name: gaugeName,
        help: 'Persistent links from this proxy replica to gateways, open now.',
        registers: [registry],
        collect() {
          this.set(open());
        },
      }),
    linkRedials:
      (registry.getSingleMetric(redialName) as Counter | undefined) ??
      new Counter({
        name: redialName,
        help: 'Links to gateways dialled again after the previous one failed or was told to go away.',
        registers: [registry],
      }),
    routesDropped:
      (registry.getSingleMetric(droppedName) as Counter<'how'> | undefined) ??
      new Counter({
        name: droppedName,
        help: 'Routes dropped because the presence store no longer had their record (expired), by how it was noticed: reconcile, route-failed.',
        labelNames: ['how'],
        registers: [registry],
      }),
    buffered:
      (registry.getSingleMetric(bufferedName) as Gauge | undefined) ??
      new Gauge({
        name: bufferedName,
        help: 'Response bytes held on gateway links for readers now (arrived, not yet read); at most the link buffer budget.',
        registers: [registry],
        collect() {
          this.set(budget.outstanding);
        },
      }),
    overBudget:
      (registry.getSingleMetric(overName) as Counter | undefined) ??
      new Counter({
        name: overName,
        help: 'Streams reset because their data would have taken the link buffer budget past its limit.',
        registers: [registry],
      }),
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A read that changes nothing (RFC 9110 safe methods), not an upgrade. */
function safeToRepeat(open: Open): boolean {
  const h = open.head;
  const http = h.case === 'http' ? h.value : h.case === 'extension' ? h.value.http : undefined;
  return http !== undefined && !http.upgrade && SAFE_METHODS.has(http.method.toUpperCase());
}

/**
 * The proxy side of routing: a local table of which gateway holds which agent, fed by a
 * presence watch, and a few persistent links to each gateway that carry every stream to its
 * agents. When no gateway holds an agent the caller learns it at once, without a timeout; when
 * a gateway turns out not to hold it (stale presence), the stream's Open, kept until anything
 * comes back, is sent to the gateway that holds it now.
 */
export class AgentRouter {
  private readonly table: RouteTable;
  private readonly clients = new Map<string, FrameClient>();
  private readonly pools = new Map<string, LinkPool>();
  private readonly metrics: RouterMetrics | undefined;
  private stopped = false;
  /** What every link of this router holds for readers, together. */
  private readonly linkBudget: WindowBudget;
  private readonly onUnrouted = (s: LinkStream, reason: TunnelError, mayHaveReached: boolean) =>
    this.unrouted(s, reason, mayHaveReached);

  constructor(private readonly opts: AgentRouterOptions) {
    this.linkBudget = new WindowBudget(opts.linkBufferBudgetBytes ?? 64 * 1024 * 1024);
    this.metrics = routerMetrics(opts.registry, () => this.linksOpen, this.linkBudget);
    this.table = new RouteTable({
      bus: opts.bus,
      logger: opts.logger,
      reconcileIntervalMs: opts.reconcileIntervalMs ?? 30_000,
      onDropped: (_agent, how) => this.metrics?.routesDropped.inc({ how }),
      onReconciled: () => this.dropUnnamedPools(),
    });
  }

  async start(): Promise<void> {
    await this.table.start();
  }

  /** Compares the routing table with the store now (also done every `reconcileIntervalMs`). */
  reconcile(): Promise<number> {
    return this.table.reconcile();
  }

  stop(): void {
    this.stopped = true;
    this.table.stop();
    for (const pool of this.pools.values())
      for (const link of pool.all) link.close(new TunnelError(TunnelErrorCode.CANCELLED, 'router stopped'));
    this.pools.clear();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  lookup(agent: string): PresenceRecord | undefined {
    return this.table.get(agent);
  }

  agents(): PresenceRecord[] {
    return this.table.values();
  }

  /** Links to gateways open now (not closed, not going away). */
  get linksOpen(): number {
    let n = 0;
    for (const pool of this.pools.values()) n += pool.open.length;
    return n;
  }

  /** The link the next stream to the gateway at `address` would take (tests, diagnostics). */
  linksTo(address: string): GatewayLink[] {
    return this.pools.get(address)?.all ?? [];
  }

  /**
   * Opens a logical stream to `agent`. Throws a NOT_FOUND TunnelError synchronously when no
   * gateway holds it; later failures arrive through the stream.
   */
  open(agent: string, init: RouteOpenInit): TunnelStream {
    const record = this.table.get(agent);
    if (!record) throw agentNotConnected(agent);
    const open = openInitOf(init, agent);
    const local = this.opts.local;
    if (local && record.gatewayId === local.gatewayId) return local.openLocal(agent, openMessage(open, 1));
    const stream = new LinkStream(open, this.opts.maxChunkSize ?? 64 * 1024, this.onUnrouted);
    stream.ceiling = this.linkBudget;
    stream.onOverCeiling = () => this.metrics?.overBudget.inc();
    const deadline = init.deadline ?? Deadline.after(this.opts.routeTimeoutMs ?? 10_000);
    this.send(stream, { address: record.internalAddress, sessionId: record.sessionId, deadline, resent: 0 });
    // Without a deadline of its own, the request's answer is not bounded: only routing is.
    this.watchDeadline(stream, deadline, init.routeOnly === true || !init.deadline);
    return stream;
  }

  /**
   * A request that heard nothing back by its deadline fails then (unless the deadline bounds its
   * routing only: `routeOnly`, or no deadline given and `routeTimeoutMs` used), whatever the link
   * under it is doing; and that link is probed either way: a gateway that
   * stopped answering (paused, partitioned: no closed socket tells) loses the link at once
   * instead of keeping it, and every request sent on it, until the heartbeat notices.
   */
  private watchDeadline(stream: LinkStream, deadline: Deadline, routeOnly: boolean): void {
    const cancel = deadline.onExpiry(() => {
      if (stream.heardBack || stream.destroyed) return;
      stream.link?.probe(this.opts.linkProbeTimeoutMs ?? 2_000);
      if (!routeOnly)
        stream.reset(TunnelErrorCode.DEADLINE_EXCEEDED, `no answer within ${deadline.timeoutMs} ms`);
    });
    stream.once('close', cancel);
  }

  /**
   * Links to gateways that no route names any more (gone from presence) are closed once they
   * carry nothing, with their client.
   */
  private dropUnnamedPools(): void {
    const named = this.table.addresses();
    for (const [address, pool] of this.pools) {
      if (named.has(address) || pool.all.some((l) => l.activeStreams > 0)) continue;
      for (const link of pool.all)
        link.close(new TunnelError(TunnelErrorCode.CANCELLED, 'gateway gone from presence'));
      this.pools.delete(address);
      this.clients.get(address)?.close();
      this.clients.delete(address);
    }
  }

  private send(stream: LinkStream, route: Route): void {
    stream.route = route;
    // Sent again later, the Open carries what is left of the deadline by then.
    if (stream.open.timeoutMs > 0) stream.open.timeoutMs = route.deadline.openTimeoutMs();
    try {
      this.pool(route.address).pick().attach(stream);
    } catch (err) {
      stream.destroy(err as Error);
    }
  }

  /**
   * A gateway did not take the stream (route refused, link lost): find the agent again. A
   * request whose Open may have reached the agent before its link was lost is sent again only
   * when doing it twice is harmless.
   */
  private unrouted(stream: LinkStream, reason: TunnelError, mayHaveReached: boolean): void {
    const route = stream.route;
    if (stream.destroyed || !route) return;
    if (
      this.stopped ||
      route.deadline.expired() ||
      (mayHaveReached && (!safeToRepeat(stream.open) || route.resent >= MAX_RESENDS_AFTER_LOST_LINK))
    ) {
      stream.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason.message));
      return;
    }
    const agent = stream.open.agent;
    // A refusal means the route is stale; a lost link says nothing about where the agent is.
    const refused = reason.code === TunnelErrorCode.NOT_FOUND;
    this.retarget(agent, route, refused).then(
      (next) => {
        if (stream.destroyed) return;
        if (!next) stream.destroy(agentNotConnected(agent));
        else if (this.stopped) stream.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'router stopped'));
        // The deadline may have passed while the store was asked: nothing is sent after it.
        else if (route.deadline.expired())
          stream.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason.message));
        else
          this.send(stream, {
            address: next.internalAddress,
            sessionId: next.sessionId,
            deadline: route.deadline,
            resent: route.resent + (mayHaveReached ? 1 : 0),
          });
      },
      (err: unknown) =>
        stream.destroy(new TunnelError(TunnelErrorCode.UNAVAILABLE, `${reason.message}; ${String(err)}`)),
    );
  }

  /**
   * Asks the store itself (not the local table) where the agent is now; after a refusal, only a
   * route other than the failed one will do.
   */
  private async retarget(
    agent: string,
    failed: Route,
    refused: boolean,
  ): Promise<PresenceRecord | undefined> {
    this.opts.logger.info({ agent, gateway: failed.address }, 'route to agent failed; checking presence');
    const same = (r: PresenceRecord | undefined) =>
      !r || (refused && r.sessionId === failed.sessionId && r.internalAddress === failed.address);
    let asked = true;
    const fresh = await this.opts.bus.presence.get(agent).catch(() => {
      asked = false;
      return this.table.get(agent);
    });
    // The store answered and has no record: the route is dead (expired without an event).
    if (asked && !fresh) this.table.forget(agent, failed);
    if (same(fresh)) {
      // Give a reconnecting agent a moment: its new presence may be about to land.
      await new Promise((r) => setTimeout(r, 200)); // wait-ok: production back-off, not a test
      const again = this.table.get(agent);
      return same(again) ? undefined : again;
    }
    if (fresh) this.table.set(agent, fresh);
    return fresh;
  }

  private pool(address: string): LinkPool {
    let pool = this.pools.get(address);
    if (!pool) {
      pool = new LinkPool(this.opts.linksPerGateway ?? 2, (redial) => {
        if (redial) this.metrics?.linkRedials.inc();
        return new GatewayLink({
          address,
          client: this.client(address),
          metadata: this.opts.metadata?.(),
          pingIntervalMs: this.opts.linkPingIntervalMs ?? 10_000,
          maxAgeMs: this.opts.linkMaxAgeMs,
          windowBudget: new WindowBudget(DEFAULT_SESSION_WINDOW_BUDGET, this.linkBudget),
          onClosed: (link, reason) =>
            this.opts.logger.info(
              { gateway: link.address, reason: reason.message },
              'link to gateway closed',
            ),
        });
      });
      this.pools.set(address, pool);
    }
    return pool;
  }

  private client(address: string): FrameClient {
    let c = this.clients.get(address);
    if (!c) {
      c = gatewayClient(address, this.opts.credentials, { serverNameOverride: this.opts.serverNameOverride });
      this.clients.set(address, c);
    }
    return c;
  }
}
