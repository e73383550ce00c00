import { randomUUID } from 'node:crypto';
import type { OpenMessageInit } from '@pullplane/proto';
import {
  DEFAULT_SESSION_WINDOW_BUDGET,
  Multiplexer,
  type PeerViolation,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
  WindowBudget,
} from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { type AgentLimits, DEFAULT_AGENT_LIMITS, ViolationCounter } from './agent-limits.js';
import type { FrameCall } from './frame-call.js';

export interface AgentSessionInfo {
  agent: string;
  agentVersion: string;
  protocolVersion: number;
  heartbeatIntervalMs: number;
  capabilities: string[];
  /** An agent credential, or a legacy certificate without a kind (accepted by opt-in). */
  credential: 'agent' | 'unmarked';
  /** The agent's address as this gateway sees it. */
  remote: string;
  /** The `jti` of the agent token the tunnel was opened with, if a token. */
  tokenId?: string;
}

export interface AgentSessionOptions {
  maxChunkSize: number;
  initialWindow: number;
  /** Window growth of all sessions of the process: this session reserves in it too. */
  processBudget?: WindowBudget;
  /** Relayed bytes waiting in transport queues, across the process: this agent's share counts in it. */
  processRelayBudget?: WindowBudget;
  limits?: AgentLimits;
  /** The agent broke the protocol (the stream concerned has been reset). */
  onViolation?: (session: AgentSession, violation: PeerViolation) => void;
  /** The agent's tunnel is being closed for breaking the protocol too often. */
  onViolationsExceeded?: (session: AgentSession) => void;
  /** The agent counts as dead after this long without any frame from it. */
  idleTimeoutMs: number;
  logger: Logger;
  onHeartbeat: (session: AgentSession) => void;
  onRtt?: (rttMs: number) => void;
  onClosed: (session: AgentSession, reason: TunnelError) => void;
}

/**
 * One connected agent: its tunnel call, the multiplexer over it, and liveness. The session
 * ends when the call ends, when the agent goes silent, or when it is replaced or drained.
 */
export class AgentSession {
  readonly sessionId = randomUUID();
  readonly connectedAt = new Date();
  lastHeartbeat = new Date();
  private pingTimer: NodeJS.Timeout | undefined;
  readonly mux: Multiplexer;
  /** This agent's share of the process's relay budget. */
  readonly relayBudget: WindowBudget;
  private readonly violations: ViolationCounter;
  private idleTimer: NodeJS.Timeout | undefined;
  private ended = false;
  private readonly log: Logger;

  constructor(
    readonly info: AgentSessionInfo,
    private readonly call: FrameCall,
    private readonly opts: AgentSessionOptions,
  ) {
    this.log = opts.logger.child({ agent: info.agent, session: this.sessionId });
    const limits = opts.limits ?? DEFAULT_AGENT_LIMITS;
    this.relayBudget = new WindowBudget(limits.relayShareBytes, opts.processRelayBudget);
    this.violations = new ViolationCounter(limits);
    this.mux = new Multiplexer({
      sink: call.sink,
      idParity: 'odd',
      protocolVersion: info.protocolVersion,
      maxChunkSize: opts.maxChunkSize,
      initialWindow: opts.initialWindow,
      windowBudget: new WindowBudget(DEFAULT_SESSION_WINDOW_BUDGET, opts.processBudget),
      peerLimits: limits.head,
    });
    this.mux.on('violation', (v) => this.onViolation(v));
    this.mux.on('ping', () => {
      this.lastHeartbeat = new Date();
      opts.onHeartbeat(this);
    });
    this.mux.on('pong', (rtt) => opts.onRtt?.(rtt));
    // Heartbeats in both directions: the agent's pings tell us it is alive; ours keep traffic
    // flowing towards it (mesh idle timeouts count both ways) and measure the round trip.
    if (info.heartbeatIntervalMs > 0) {
      this.pingTimer = setInterval(() => this.mux.ping(), info.heartbeatIntervalMs);
      this.pingTimer.unref();
    }
    this.mux.on('protocol-error', (msg) => this.log.warn({ reason: msg }, 'agent protocol error'));
    this.armIdleTimer();
    call.serve(
      (f) => {
        this.armIdleTimer();
        this.mux.receive(f);
      },
      (how, err) =>
        this.end(
          new TunnelError(
            TunnelErrorCode.UNAVAILABLE,
            how === 'failed'
              ? `agent ${info.agent} tunnel failed: ${err?.message}`
              : `agent ${info.agent} disconnected`,
          ),
        ),
    );
  }

  get agent(): string {
    return this.info.agent;
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Opens a logical stream to the agent. Throws a TunnelError when that is impossible. */
  open(init: OpenMessageInit): TunnelStream {
    if (this.ended)
      throw new TunnelError(TunnelErrorCode.UNAVAILABLE, `agent ${this.agent} is not connected`);
    return this.mux.open(init);
  }

  /**
   * Stops new streams and lets in-flight ones finish, up to `drainMs`; then the tunnel is
   * closed. The agent is told with a GoAway so it reconnects (elsewhere) at once.
   */
  async drain(reason: string, drainMs: number): Promise<void> {
    if (this.ended) return;
    this.mux.goAway(reason, drainMs);
    const deadline = Date.now() + drainMs;
    while (this.mux.activeStreams > 0 && Date.now() < deadline && !this.ended) {
      await new Promise((r) => setTimeout(r, 25));
    }
    this.end(new TunnelError(TunnelErrorCode.GOING_AWAY, reason));
  }

  end(reason: TunnelError): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.idleTimer);
    clearInterval(this.pingTimer);
    this.mux.close(reason);
    this.call.end();
    this.opts.onClosed(this, reason);
  }

  private onViolation(v: PeerViolation): void {
    if (this.ended) return;
    this.opts.onViolation?.(this, v);
    this.log.warn(
      { violation: v.kind, stream: v.streamId, reason: v.message },
      'agent broke the tunnel protocol; stream reset',
    );
    const count = this.violations.record(v);
    if (count === undefined) return;
    const limits = this.opts.limits ?? DEFAULT_AGENT_LIMITS;
    this.log.error(
      {
        securityEvent: 'agent-protocol-violations',
        violations: count,
        windowMs: limits.violationWindowMs,
        last: v.kind,
        remote: this.info.remote,
      },
      'security: agent keeps breaking the tunnel protocol; closing its tunnel',
    );
    this.opts.onViolationsExceeded?.(this);
    this.end(
      new TunnelError(
        TunnelErrorCode.PROTOCOL,
        `agent ${this.agent} broke the tunnel protocol ${count} times within ${limits.violationWindowMs} ms`,
      ),
    );
  }

  private armIdleTimer(): void {
    // Refreshing on every frame would churn timers under load; refresh at most every second.
    const now = Date.now();
    if (this.idleTimer && now - this.lastFrameAt < 1_000) return;
    this.lastFrameAt = now;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.log.warn(
        { idleTimeoutMs: this.opts.idleTimeoutMs },
        'agent missed its heartbeats; closing tunnel',
      );
      this.end(new TunnelError(TunnelErrorCode.UNAVAILABLE, `agent ${this.agent} missed its heartbeats`));
    }, this.opts.idleTimeoutMs + 1_000);
    this.idleTimer.unref();
  }

  private lastFrameAt = 0;
}
