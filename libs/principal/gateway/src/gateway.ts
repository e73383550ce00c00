import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Tracer } from '@opentelemetry/api';
import type { Bus } from '@pullplane/bus';
import {
  AGENT_TUNNEL_CONNECT_PATH,
  GATEWAY_FORWARD_PATH,
  GATEWAY_LINK_PATH,
  type Open,
  type OpenMessageInit,
} from '@pullplane/proto';
import { TunnelError, TunnelErrorCode, type TunnelStream, WindowBudget } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type AgentLimits, DEFAULT_AGENT_LIMITS } from './agent-limits.js';
import type { AgentSession } from './agent-session.js';
import type { Authenticator } from './caller-auth.js';
import { FrameServer } from './frame-server.js';
import { type GrpcListener, type ListenerTls, startGrpcListener } from './grpc-listener.js';
import { createLinkHandler } from './link-service.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { RelayCreditQueue } from './relay-credit.js';
import { ReplacementWatch } from './replacement-watch.js';
import { SessionRegistry } from './session-registry.js';
import { refuseStrayCalls } from './stray-calls.js';
import { createTunnelHandler } from './tunnel-service.js';

export interface ListenerConfig {
  host: string;
  port: number;
  tls?: ListenerTls;
}

export interface GatewayOptions {
  gatewayId?: string;
  bus: Bus;
  logger: Logger;
  registry: Registry;
  /** Where agents connect. */
  agentListener: ListenerConfig;
  /** Where proxy replicas reach this gateway; omitted in single-process mode. */
  internalListener?: ListenerConfig;
  /** Host other replicas use to reach the internal listener (pod IP). */
  advertiseHost: string;
  authenticateAgent: Authenticator;
  authenticateInternal: Authenticator;
  maxChunkSize: number;
  initialWindow: number;
  /**
   * Window growth (bulk streams) all agent sessions of this process may reserve together;
   * each session is also held to its own share. Default 256 MiB.
   */
  windowBudgetBytes?: number;
  /**
   * Payload relayed between proxy links and agent tunnels that may wait in transport queues at
   * once; a stream that would exceed it is reset. Default 64 MiB.
   */
  relayBudgetBytes?: number;
  /** What each agent is held to (frame limits, violations, its relay share); defaults per field. */
  agentLimits?: Partial<AgentLimits>;
  drainTimeoutMs: number;
  presenceRefreshMs: number;
  /** This gateway's clock for the times it shows in presence; orders nothing. Default `Date.now`. */
  now?: () => number;
  helloTimeoutMs?: number;
  minIdleTimeoutMs?: number;
  isRevoked?: (agent: string) => boolean;
  /** Called when an agent's tunnel is established here (cluster registration hooks in). */
  onAgentConnected?: (agent: string) => void;
  /** Replacements of one agent's live tunnel within this window count towards flapping. Default 60 s. */
  flappingWindowMs?: number;
  /** Replacements within the window that make a security event. Default 3. */
  flappingThreshold?: number;
  /** Set when traces are exported: a span per forwarded stream. */
  tracer?: Tracer | undefined;
}

/** Keepalive PINGs on every connection: a peer that does not answer within the timeout is cut. */
const KEEPALIVE = { keepaliveTimeMs: 30_000, keepaliveTimeoutMs: 10_000 } as const;

export function defaultGatewayId(): string {
  return `${os.hostname()}-${randomBytes(3).toString('hex')}`;
}

/**
 * The stream gateway: holds agent tunnels and serves logical streams over them. Each
 * listener has its own gRPC server with its own service: agents reach only Connect, proxy
 * replicas only Link, so one kind of credential can never use the other's service.
 */
export class Gateway {
  readonly gatewayId: string;
  /** Window growth and buffered bytes of every agent session here (each also has its own share). */
  readonly windowBudget: WindowBudget;
  /** Relayed bytes not yet taken by a transport, across all proxy links. */
  readonly relayBudget: WindowBudget;
  /** Relayed streams holding back credit until the relay budgets have room for it. */
  readonly relayCredit = new RelayCreditQueue();
  private readonly registry: SessionRegistry;
  private readonly metrics: GatewayMetrics;
  private readonly agentServer: FrameServer;
  private readonly internalServer: FrameServer | undefined;
  private agentListener: GrpcListener | undefined;
  private internalListener: GrpcListener | undefined;
  private accepting = false;
  private readonly links = new Set<(reason: string) => void>();
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: GatewayOptions) {
    this.gatewayId = opts.gatewayId ?? defaultGatewayId();
    this.windowBudget = new WindowBudget(opts.windowBudgetBytes ?? 256 * 1024 * 1024);
    this.relayBudget = new WindowBudget(opts.relayBudgetBytes ?? 64 * 1024 * 1024);
    this.metrics = createGatewayMetrics(
      opts.registry,
      () => this.registry.size,
      () => this.sessions().map((s) => s.agent),
      () => this.relayBudget.outstanding,
    );
    const replacements = new ReplacementWatch({
      windowMs: opts.flappingWindowMs ?? 60_000,
      threshold: opts.flappingThreshold ?? 3,
      onFlapping: (event) => {
        this.metrics.tunnelFlapping.inc();
        opts.logger.warn(
          { securityEvent: 'tunnel-flapping', ...event },
          'security: agent tunnel keeps being replaced between holders of the same credentials',
        );
      },
    });
    this.registry = new SessionRegistry({
      bus: opts.bus,
      gatewayId: this.gatewayId,
      internalAddress: () => this.internalAddress,
      logger: opts.logger,
      presenceRefreshMs: opts.presenceRefreshMs,
      ...(opts.now ? { now: opts.now } : {}),
      replaceDrainMs: Math.min(opts.drainTimeoutMs, 5_000),
      onReplaced: (r) => {
        this.metrics.tunnelReplacements.inc();
        replacements.record(r);
      },
    });
    const internalConnections = (remote: string) => this.internalListener?.connectionIdentity(remote);
    const tunnel = createTunnelHandler({
      gatewayId: this.gatewayId,
      authenticate: opts.authenticateAgent,
      logger: opts.logger,
      metrics: this.metrics,
      maxChunkSize: opts.maxChunkSize,
      initialWindow: opts.initialWindow,
      windowBudget: this.windowBudget,
      relayBudget: this.relayBudget,
      limits: { ...DEFAULT_AGENT_LIMITS, ...opts.agentLimits },
      helloTimeoutMs: opts.helloTimeoutMs ?? 10_000,
      minIdleTimeoutMs: opts.minIdleTimeoutMs ?? 15_000,
      isAccepting: () => this.accepting,
      ...(opts.isRevoked ? { isRevoked: opts.isRevoked } : {}),
      refusal: (agent, credential) => this.registry.refusal(agent, credential),
      onSession: (s) => {
        this.registry.add(s);
        opts.onAgentConnected?.(s.agent);
      },
      sessionHooks: {
        onHeartbeat: (s) => this.registry.heartbeat(s),
        onRtt: (ms) => this.metrics.heartbeatRtt.observe(ms / 1000),
        onClosed: (s, reason) => this.onSessionClosed(s, reason),
        onViolation: (s, v) => this.metrics.agentViolations.inc({ agent: s.agent, kind: v.kind }),
        onViolationsExceeded: (s) => this.metrics.violationDisconnects.inc({ agent: s.agent }),
      },
    });
    const stray = (path: string) =>
      refuseStrayCalls({
        listener: 'agents',
        path,
        identify: opts.authenticateAgent,
        logger: opts.logger,
        metrics: this.metrics,
      });
    this.agentServer = new FrameServer({
      ...KEEPALIVE,
      methods: new Map([
        [AGENT_TUNNEL_CONNECT_PATH, tunnel],
        [GATEWAY_FORWARD_PATH, stray(GATEWAY_FORWARD_PATH)],
        [GATEWAY_LINK_PATH, stray(GATEWAY_LINK_PATH)],
      ]),
    });
    if (opts.internalListener) {
      // Retired (one call per stream, served for the release before links): a proxy that
      // still calls it learns why, and the operator sees who.
      const forward = refuseStrayCalls({
        listener: 'internal',
        path: GATEWAY_FORWARD_PATH,
        details: `${GATEWAY_FORWARD_PATH} is retired: upgrade the proxy to a release that uses ${GATEWAY_LINK_PATH}`,
        identify: opts.authenticateInternal,
        connections: internalConnections,
        logger: opts.logger,
        metrics: this.metrics,
      });
      const link = createLinkHandler({
        gatewayId: this.gatewayId,
        authenticate: opts.authenticateInternal,
        connections: internalConnections,
        session: (agent) => this.registry.get(agent),
        maxChunkSize: opts.maxChunkSize,
        initialWindow: opts.initialWindow,
        credit: this.relayCredit,
        links: this.links,
        logger: opts.logger.child({ component: 'link' }),
        metrics: this.metrics,
        ...(opts.tracer ? { tracer: opts.tracer } : {}),
      });
      const connect = refuseStrayCalls({
        listener: 'internal',
        path: AGENT_TUNNEL_CONNECT_PATH,
        identify: opts.authenticateInternal,
        connections: internalConnections,
        logger: opts.logger,
        metrics: this.metrics,
      });
      this.internalServer = new FrameServer({
        ...KEEPALIVE,
        methods: new Map([
          [GATEWAY_FORWARD_PATH, forward],
          [GATEWAY_LINK_PATH, link],
          [AGENT_TUNNEL_CONNECT_PATH, connect],
        ]),
      });
    }
  }

  async start(): Promise<void> {
    if (this.opts.internalListener && this.internalServer) {
      this.internalListener = await startGrpcListener(this.internalServer, {
        name: 'internal',
        logger: this.opts.logger,
        ...this.opts.internalListener,
      });
    }
    await this.registry.start();
    this.agentListener = await startGrpcListener(this.agentServer, {
      name: 'agents',
      logger: this.opts.logger,
      ...this.opts.agentListener,
    });
    this.accepting = true;
  }

  get agentPort(): number {
    return this.agentListener?.port ?? 0;
  }

  get internalPort(): number {
    return this.internalListener?.port ?? 0;
  }

  get internalAddress(): string {
    if (!this.internalListener) return '';
    const host = this.opts.advertiseHost.includes(':')
      ? `[${this.opts.advertiseHost}]`
      : this.opts.advertiseHost;
    return `${host}:${this.internalListener.port}`;
  }

  get ready(): boolean {
    return this.accepting && this.opts.bus.status === 'connected';
  }

  sessions(): AgentSession[] {
    return this.registry.all();
  }

  session(agent: string): AgentSession | undefined {
    return this.registry.get(agent);
  }

  /** Opens a logical stream to an agent whose tunnel this gateway holds. */
  openLocal(agent: string, open: OpenMessageInit | Open): TunnelStream {
    const session = this.registry.get(agent);
    if (!session)
      throw new TunnelError(
        TunnelErrorCode.NOT_FOUND,
        `agent ${agent} is not connected to gateway ${this.gatewayId}`,
      );
    const { streamId: _ignored, agent: _agent, $typeName: _t, ...init } = open as Open;
    this.metrics.localStreams.inc();
    return session.open({ ...init, agent: '' });
  }

  /** Swaps the TLS material of both listeners; established tunnels are untouched. */
  reloadTls(material: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer }): void {
    for (const l of [this.agentListener, this.internalListener]) {
      if (l && (l === this.agentListener ? this.opts.agentListener.tls : this.opts.internalListener?.tls))
        l.reloadTls(material);
    }
  }

  /** Disconnects an agent (revocation, admin kick). */
  kick(agent: string, reason: string): boolean {
    const session = this.registry.get(agent);
    if (!session) return false;
    session.end(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason));
    return true;
  }

  /** Disconnects every agent whose tunnel was opened with the token `jti` (it was revoked). */
  kickToken(jti: string, reason: string): string[] {
    const kicked: string[] = [];
    for (const session of this.registry.all()) {
      if (session.info.tokenId !== jti) continue;
      session.end(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason));
      kicked.push(session.agent);
    }
    return kicked;
  }

  /**
   * Graceful stop: refuse new agents, tell connected ones to go elsewhere (GoAway), let
   * in-flight streams finish up to the drain timeout, then close everything.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.accepting = false;
      // Refuse new tunnels first, so agents told to move land on another replica.
      this.agentListener?.stopAccepting();
      const drainMs = this.opts.drainTimeoutMs;
      this.opts.logger.info({ agents: this.registry.size, drainMs }, 'gateway draining');
      await Promise.all(this.registry.all().map((s) => s.drain('gateway is shutting down', drainMs)));
      // Links would hold the internal listener's connections open past the drain: their relayed
      // streams ended with the tunnels, and proxies re-dial the gateway that holds the agent next.
      for (const close of [...this.links]) close('gateway is shutting down');
      this.registry.stop();
      await Promise.all([this.agentListener?.close(1_000), this.internalListener?.close(drainMs)]);
      this.agentServer.destroy();
      this.internalServer?.destroy();
      this.opts.logger.info('gateway stopped');
    })();
    return this.stopping;
  }

  private onSessionClosed(session: AgentSession, reason: TunnelError): void {
    this.opts.logger.info(
      { agent: session.agent, session: session.sessionId, reason: reason.message },
      'agent tunnel closed',
    );
    this.registry.removed(session);
  }
}
