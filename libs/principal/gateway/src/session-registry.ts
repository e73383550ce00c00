import type { Bus, PresenceRecord } from '@pullplane/bus';
import { TunnelError, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { AgentSession } from './agent-session.js';
import type { Replacement } from './replacement-watch.js';

export interface SessionRegistryOptions {
  bus: Bus;
  gatewayId: string;
  /** host:port where proxies reach this gateway's internal listener ('' when it has none). */
  internalAddress: () => string;
  logger: Logger;
  /** How often every held agent's presence is rewritten, renewing the bucket TTL. */
  presenceRefreshMs: number;
  /** Grace given to in-flight streams of a session that another connection replaced. */
  replaceDrainMs: number;
  /** Called whenever a live tunnel is replaced (here or by a connection elsewhere). */
  onReplaced?: (replacement: Replacement) => void;
}

type Credential = 'agent' | 'unmarked';
/** An agent credential outranks a legacy certificate without a kind, whatever the timing. */
const RANK: Record<Credential, number> = { unmarked: 0, agent: 1 };

/**
 * The agents this gateway holds, mirrored into shared presence. A newer connection for the
 * same agent wins wherever it lands (locally the old session is drained, and a gateway that
 * sees a newer record for an agent it holds lets its own session go), unless it holds a
 * weaker credential: a legacy certificate without a kind never replaces a tunnel opened
 * with an agent credential. Every replacement is reported, so flapping can be noticed.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly lastPut = new WeakMap<AgentSession, number>();
  private stopWatch: (() => void) | undefined;
  private stopStatus: (() => void) | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: SessionRegistryOptions) {}

  async start(): Promise<void> {
    this.stopWatch = await this.opts.bus.presence.watch((ev) => {
      if (ev.type === 'put') this.onRemotePut(ev.record);
    });
    // After a bus outage, our writes may have been lost: publish everything again.
    this.stopStatus = this.opts.bus.onStatus((status) => {
      if (status === 'connected') this.publishAll('bus reconnected');
    });
    this.refreshTimer = setInterval(() => this.publishAll(), this.opts.presenceRefreshMs);
    this.refreshTimer.unref();
  }

  stop(): void {
    this.stopWatch?.();
    this.stopStatus?.();
    clearInterval(this.refreshTimer);
  }

  get(agent: string): AgentSession | undefined {
    const s = this.sessions.get(agent);
    return s && !s.closed ? s : undefined;
  }

  all(): AgentSession[] {
    return [...this.sessions.values()];
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Whether a new connection with this credential may take over the agent's name here;
   * the reason it may not, otherwise.
   */
  refusal(agent: string, credential: Credential): string | undefined {
    const current = this.get(agent);
    if (current && RANK[credential] < RANK[current.info.credential]) {
      return `agent ${agent} holds a tunnel opened with an agent credential; a certificate without a credential kind cannot replace it`;
    }
    return undefined;
  }

  add(session: AgentSession): void {
    const previous = this.sessions.get(session.agent);
    this.sessions.set(session.agent, session);
    if (previous && !previous.closed) {
      this.opts.logger.info(
        {
          agent: session.agent,
          previousSession: previous.sessionId,
          session: session.sessionId,
          previousRemote: previous.info.remote,
          remote: session.info.remote,
        },
        'agent reconnected; replacing its previous tunnel',
      );
      this.opts.onReplaced?.({ agent: session.agent, from: previous.info.remote, to: session.info.remote });
      void previous.drain('replaced by a newer connection of the same agent', this.opts.replaceDrainMs);
    }
    this.publish(session);
  }

  /** Called when a session ends for any reason. */
  removed(session: AgentSession): void {
    if (this.sessions.get(session.agent) !== session) return;
    this.sessions.delete(session.agent);
    this.opts.bus.presence
      .remove(session.agent, session.sessionId)
      .catch((err: unknown) =>
        this.opts.logger.warn({ agent: session.agent, err: String(err) }, 'could not remove presence'),
      );
  }

  heartbeat(session: AgentSession): void {
    // Heartbeats renew presence, but not more often than every 10 s per agent.
    if (Date.now() - (this.lastPut.get(session) ?? 0) >= 10_000) this.publish(session);
  }

  record(session: AgentSession): PresenceRecord {
    return {
      agent: session.agent,
      gatewayId: this.opts.gatewayId,
      internalAddress: this.opts.internalAddress(),
      sessionId: session.sessionId,
      connectedAt: session.connectedAt.toISOString(),
      lastHeartbeat: session.lastHeartbeat.toISOString(),
      agentVersion: session.info.agentVersion,
      protocolVersion: session.info.protocolVersion,
      credential: session.info.credential,
      remoteAddress: session.info.remote,
    };
  }

  private publish(session: AgentSession): void {
    if (session.closed || this.sessions.get(session.agent) !== session) return;
    this.lastPut.set(session, Date.now());
    this.opts.bus.presence.put(this.record(session)).catch((err: unknown) => {
      // Retried by the periodic refresh and on bus reconnect; the tunnel itself is fine.
      this.lastPut.delete(session);
      this.opts.logger.warn({ agent: session.agent, err: String(err) }, 'could not publish presence');
    });
  }

  private publishAll(reason?: string): void {
    if (reason) this.opts.logger.info({ agents: this.sessions.size, reason }, 'republishing presence');
    for (const s of this.sessions.values()) {
      if (reason || Date.now() - (this.lastPut.get(s) ?? 0) >= this.opts.presenceRefreshMs / 2)
        this.publish(s);
    }
  }

  private onRemotePut(record: PresenceRecord): void {
    const mine = this.sessions.get(record.agent);
    if (!mine || mine.closed || record.sessionId === mine.sessionId) return;
    // One total order on every gateway: credential rank, then connection time, then session.
    const theirRank = RANK[record.credential ?? 'agent'];
    const ourRank = RANK[mine.info.credential];
    const theirs = Date.parse(record.connectedAt);
    const ours = mine.connectedAt.getTime();
    const newer =
      theirRank > ourRank ||
      (theirRank === ourRank && (theirs > ours || (theirs === ours && record.sessionId > mine.sessionId)));
    if (!newer) {
      // A stale write (e.g. a gateway that has not noticed its agent left): restate ours.
      this.publish(mine);
      return;
    }
    this.opts.logger.info(
      {
        agent: record.agent,
        session: mine.sessionId,
        newGateway: record.gatewayId,
        remote: mine.info.remote,
        newRemote: record.remoteAddress,
      },
      'agent connected elsewhere; releasing this tunnel',
    );
    this.opts.onReplaced?.({
      agent: record.agent,
      from: mine.info.remote,
      to: record.remoteAddress ?? `gateway ${record.gatewayId}`,
    });
    this.sessions.delete(record.agent);
    void mine
      .drain('agent connected to another gateway', this.opts.replaceDrainMs)
      .catch(() => mine.end(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'replaced')));
  }
}
