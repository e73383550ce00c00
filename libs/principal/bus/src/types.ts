/** Which gateway holds an agent's tunnel, and how other replicas reach it. */
export interface PresenceRecord {
  agent: string;
  gatewayId: string;
  /** host:port of the gateway's internal listener (the proxy -> gateway hop). */
  internalAddress: string;
  /** Unique per tunnel: a reconnect yields a new session, which replaces the old one. */
  sessionId: string;
  connectedAt: string;
  lastHeartbeat: string;
  agentVersion: string;
  protocolVersion: number;
  /**
   * How the agent authenticated: with an agent credential, or with a legacy certificate that
   * carries no kind (accepted by opt-in). An agent credential always wins over an unmarked
   * one; absent in records of older gateways, read as `agent`.
   */
  credential?: 'agent' | 'unmarked' | undefined;
  /** The agent's address as the holding gateway saw it, for logs and security events. */
  remoteAddress?: string | undefined;
  /**
   * The store's revision of this record (set on every read, never written): writes are ordered
   * by it, not by any gateway's clock.
   */
  revision?: number | undefined;
}

/**
 * What renewing a session's record found: still this session's (its new revision), or taken by
 * another session (its record), or removed since (none): either way, the session lost the agent.
 */
export type PresenceRefresh =
  | { held: true; revision: number }
  | { held: false; current: PresenceRecord | undefined };

export type PresenceEvent = { type: 'put'; record: PresenceRecord } | { type: 'delete'; agent: string };

/**
 * Presence is ordered by the store, never by clocks: every write is a compare-and-set on the
 * key's revision. A new session claims the agent (`put`: create-only when there is no record,
 * else an update on the revision it just read), so the last claim wins; a session renews its
 * record (`refresh`) only while the store still holds the revision it wrote last, so a replaced
 * session can neither overwrite its successor nor bring its record back once removed.
 */
export interface PresenceStore {
  /** A new session claims the agent; returns the revision written. */
  put(record: PresenceRecord): Promise<number>;
  /**
   * Renews the record of the session that wrote `revision`. A record that expired (the store
   * holds nothing for the agent, not even a removal) is written again: the session still holds
   * the agent and nobody replaced it.
   */
  refresh(record: PresenceRecord, revision: number): Promise<PresenceRefresh>;
  /** Removes the agent's record only while it still names this session, so a stale
   *  gateway cannot erase the presence a newer connection wrote. */
  remove(agent: string, sessionId: string): Promise<void>;
  get(agent: string): Promise<PresenceRecord | undefined>;
  list(): Promise<PresenceRecord[]>;
  /** Current records first (as puts), then changes. Returns a function that stops it. */
  watch(listener: (event: PresenceEvent) => void): Promise<() => void>;
}

export type ControlEvent =
  | { type: 'agent-revoked'; agent: string; reason: string }
  | { type: 'agent-kicked'; agent: string; reason: string }
  | { type: 'token-denied'; jti: string }
  | { type: 'config-reload'; service?: string };

export interface ControlBus {
  publish(event: ControlEvent): Promise<void>;
  subscribe(listener: (event: ControlEvent) => void): () => void;
}

export type BusStatus = 'connected' | 'disconnected';

/** A durable revocation: an agent (all its credentials) or one token, by jti. */
export type Revocation =
  | { kind: 'agent'; agent: string; reason: string; at: string }
  | { kind: 'token'; jti: string; reason: string; at: string };

/**
 * Revocations outlive every process: gateways load them at start and watch for new ones, so a
 * revoked agent stays out across restarts (control events alone would be forgotten).
 */
export interface RevocationStore {
  add(revocation: Revocation): Promise<void>;
  /** Current revocations first, then new ones. Returns a function that stops it. */
  watch(listener: (revocation: Revocation) => void): Promise<() => void>;
  list(): Promise<Revocation[]>;
}

export interface Bus {
  readonly kind: 'nats' | 'memory';
  readonly presence: PresenceStore;
  readonly control: ControlBus;
  readonly revocations: RevocationStore;
  readonly status: BusStatus;
  /** Called on every connect/disconnect; returns an unsubscribe function. */
  onStatus(listener: (status: BusStatus) => void): () => void;
  close(): Promise<void>;
}
