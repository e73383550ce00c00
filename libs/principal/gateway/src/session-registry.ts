import type { Bus, PresenceRecord, PresenceRefresh } from '@pullplane/bus';
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
  /**
   * This gateway's clock, for the times shown in presence (`connectedAt`). Nothing is ordered by
   * it: gateways' clocks may disagree. Default `Date.now`.
   */
  now?: () => number;
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
 *
 * "Newer" is the store's order, not a clock's: a new session claims the agent's record (the
 * store's compare-and-set makes the last claim win) and renews it only on the revision it wrote
 * last. A session whose renewal finds another session's record, or none after a removal, was
 * replaced and lets go; a record with a later revision than ours, seen on the watch, says the same.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly lastPut = new WeakMap<AgentSession, number>();
  /** The revision each session wrote last; absent until its claim is written. */
  private readonly revisions = new WeakMap<AgentSession, number>();
  private readonly connectedAt = new WeakMap<AgentSession, number>();
  /** Sessions with a write under way: one at a time, the periodic refresh retries. */
  private readonly writing = new WeakSet<AgentSession>();
  /** The latest other session's record seen while a session's claim was under way. */
  private readonly seenWhileClaiming = new WeakMap<AgentSession, PresenceRecord>();
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
    this.connectedAt.set(session, (this.opts.now ?? Date.now)());
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
      connectedAt: new Date(this.connectedAt.get(session) ?? session.connectedAt.getTime()).toISOString(),
      lastHeartbeat: session.lastHeartbeat.toISOString(),
      agentVersion: session.info.agentVersion,
      protocolVersion: session.info.protocolVersion,
      credential: session.info.credential,
      remoteAddress: session.info.remote,
    };
  }

  /** Claims the agent for a new session, or renews the record the session wrote last. */
  private publish(session: AgentSession): void {
    if (session.closed || this.sessions.get(session.agent) !== session || this.writing.has(session)) return;
    this.writing.add(session);
    this.lastPut.set(session, Date.now());
    const record = this.record(session);
    const revision = this.revisions.get(session);
    const presence = this.opts.bus.presence;
    const write =
      revision === undefined
        ? presence.put(record).then((r): PresenceRefresh => ({ held: true, revision: r }))
        : presence.refresh(record, revision);
    write.then(
      (result) => {
        this.writing.delete(session);
        if (!result.held) return this.superseded(session, result.current);
        this.revisions.set(session, result.revision);
        const seen = this.seenWhileClaiming.get(session);
        this.seenWhileClaiming.delete(session);
        if (seen) this.onRemotePut(seen);
      },
      (err: unknown) => {
        // Retried by the periodic refresh and on bus reconnect; the tunnel itself is fine.
        this.writing.delete(session);
        this.lastPut.delete(session);
        this.opts.logger.warn({ agent: session.agent, err: String(err) }, 'could not publish presence');
      },
    );
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
    const ours = this.revisions.get(mine);
    if (ours === undefined) {
      // Our claim is under way: what came after it is known once it is written.
      const seen = this.seenWhileClaiming.get(mine);
      if ((record.revision ?? 0) >= (seen?.revision ?? 0)) this.seenWhileClaiming.set(mine, record);
      return;
    }
    // A record with an earlier revision than ours is a write the watch delivers late.
    if (record.revision !== undefined && record.revision < ours) return;
    this.superseded(mine, record);
  }

  /**
   * Another session's record came after ours (`current`), or ours was removed (none): the agent
   * is held elsewhere, unless the newcomer holds a weaker credential, which our claim overrides.
   */
  private superseded(mine: AgentSession, current: PresenceRecord | undefined): void {
    if (mine.closed || this.sessions.get(mine.agent) !== mine) return;
    if (current && RANK[current.credential ?? 'agent'] < RANK[mine.info.credential]) {
      this.revisions.delete(mine);
      this.publish(mine);
      return;
    }
    this.opts.logger.info(
      {
        agent: mine.agent,
        session: mine.sessionId,
        newGateway: current?.gatewayId,
        remote: mine.info.remote,
        newRemote: current?.remoteAddress,
      },
      current
        ? 'agent connected elsewhere; releasing this tunnel'
        : "agent's presence was removed by a newer session; releasing this tunnel",
    );
    this.opts.onReplaced?.({
      agent: mine.agent,
      from: mine.info.remote,
      to: current ? (current.remoteAddress ?? `gateway ${current.gatewayId}`) : 'a newer session',
    });
    this.sessions.delete(mine.agent);
    void mine
      .drain('agent connected to another gateway', this.opts.replaceDrainMs)
      .catch(() => mine.end(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'replaced')));
  }
}
