import type { Logger } from 'pino';
import type { AgentOpener } from './agent-call.js';
import type { KeyRouter } from './key-routing.js';
import type { PubSubHubs } from './pubsub-session.js';
import type { RedisEndpoint } from './redis-socket.js';

export interface ProxyLimits {
  /** Largest bulk string a client may send (Redis' proto-max-bulk-len), and largest reply accepted. */
  maxBulkLength: number;
  /** Most arguments in one command. */
  maxArrayLength: number;
  /** Longest inline command. */
  maxInlineLength: number;
  /** Replies owed to one client before the proxy stops reading its commands. */
  maxPendingReplies: number;
  /** Unsent pub/sub output after which a client that does not read is disconnected. */
  maxPubSubOutputBytes: number;
  /**
   * Unsent replies after which a client that does not read them is disconnected (Redis'
   * client-output-buffer-limit): replies to commands already sent keep arriving on the
   * shared principal connection, which cannot be paused for one client.
   */
  maxOutputBytes: number;
}

export const DEFAULT_LIMITS: ProxyLimits = {
  maxBulkLength: 64 * 1024 * 1024,
  maxArrayLength: 1024 * 1024,
  maxInlineLength: 64 * 1024,
  maxPendingReplies: 1024,
  maxPubSubOutputBytes: 32 * 1024 * 1024,
  maxOutputBytes: 128 * 1024 * 1024,
};

/** Bound children of the proxy's metrics, so the hot path does no label lookups. */
export interface ConnectionMetrics {
  routed: Record<'local' | 'principal' | 'agent' | 'split' | 'refused', { inc(): void }>;
  agentSeconds: { observe(seconds: number): void };
  protocolErrors: { inc(): void };
}

/** Everything client connections share. */
export interface ProxyContext {
  keys: KeyRouter;
  opener: AgentOpener;
  hubs: PubSubHubs;
  /** The principal Redis, with the password the proxy uses towards it. */
  principal: RedisEndpoint;
  /** Required from clients (AUTH / HELLO AUTH) when set. */
  password: string | undefined;
  limits: ProxyLimits;
  /** How long an agent may take to answer one command. */
  requestTimeoutMs: number;
  /** How long SUBSCRIBE waits for an agent to confirm before confirming anyway. */
  subscribeTimeoutMs: number;
  logger: Logger;
  metrics: ConnectionMetrics;
  nextClientId(): number;
}
