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
}

export type PresenceEvent = { type: 'put'; record: PresenceRecord } | { type: 'delete'; agent: string };

export interface PresenceStore {
  put(record: PresenceRecord): Promise<void>;
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
