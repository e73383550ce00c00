import type { Tracer } from '@opentelemetry/api';
import type { RedisEndpoint } from '@pullplane/redis-common';
import type { Logger } from 'pino';
import type { AgentOpener } from './agent-call.js';
import type { BufferBudget } from './buffer-budget.js';
import type { CommandBook } from './commands/table.js';
import type { KeyRouter } from './key-routing.js';
import type { PubSubHubs } from './pubsub-session.js';

export interface ProxyLimits {
  /** Most arguments in one command before AUTH (Redis 7 allows 10 to unauthenticated clients). */
  maxUnauthenticatedArgs: number;
  /** Largest command before AUTH, in bytes as sent (Redis 7: 16 KiB per argument). */
  maxUnauthenticatedBytes: number;
  /** A connection not authenticated by then is closed (0: never). */
  unauthenticatedTimeoutMs: number;
  /** Most arguments in one command. */
  maxCommandArgs: number;
  /** Largest bulk string a client may send (Redis' proto-max-bulk-len), and largest reply accepted. */
  maxBulkLength: number;
  /** Largest command, in bytes as sent. */
  maxCommandBytes: number;
  /** Longest inline command. */
  maxInlineLength: number;
  /**
   * Request bytes one connection may have in the proxy: the command being received (counted
   * whole once announced), commands waiting for their turn, commands queued toward agents.
   * Reading stops above it; a command that cannot fit even then is refused.
   */
  maxClientInputBytes: number;
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
  /** Every connection's request and reply bytes together (Redis' maxmemory-clients). */
  maxBufferedBytes: number;
  /**
   * A connection the proxy closes (QUIT, a protocol error, shutdown) is dropped this long after
   * its last reply if the client has not hung up by then.
   */
  closeGraceMs: number;
}

export const DEFAULT_LIMITS: ProxyLimits = {
  maxUnauthenticatedArgs: 10,
  maxUnauthenticatedBytes: 16 * 1024,
  unauthenticatedTimeoutMs: 10_000,
  maxCommandArgs: 16 * 1024,
  maxBulkLength: 64 * 1024 * 1024,
  maxCommandBytes: 65 * 1024 * 1024,
  maxInlineLength: 64 * 1024,
  maxClientInputBytes: 128 * 1024 * 1024,
  maxPendingReplies: 1024,
  maxPubSubOutputBytes: 32 * 1024 * 1024,
  maxOutputBytes: 128 * 1024 * 1024,
  maxBufferedBytes: 256 * 1024 * 1024,
  closeGraceMs: 5_000,
};

/** Why a connection was refused or closed: the `limit` label of redis_proxy_connections_refused_total. */
export type LimitName =
  | 'unauthenticated_args'
  | 'unauthenticated_bytes'
  | 'unauthenticated_timeout'
  | 'command_args'
  | 'command_bytes'
  | 'bulk_length'
  | 'inline_length'
  | 'client_input'
  | 'client_output'
  | 'pubsub_output'
  | 'buffer_budget'
  | 'max_clients';

/** Bound children of the proxy's metrics, so the hot path does no label lookups. */
export interface ConnectionMetrics {
  routed: Record<'local' | 'principal' | 'agent' | 'split' | 'refused', { inc(): void }>;
  agentSeconds: { observe(seconds: number): void };
  /** A command sent to an agent (argocd-agent's per-agent counters); `failed`: the agent did not answer it. */
  agentCommand?(agent: string, command: Buffer | undefined, failed: boolean): void;
  protocolErrors: { inc(): void };
  /** A command refused by name: not allowed, or sent before AUTH. */
  commandRefused(command: string, reason: 'not_allowed' | 'unauthenticated'): void;
  /** A connection refused or closed because it went over a limit. */
  limitHit(limit: LimitName): void;
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
  /** Every connection's buffered bytes, against limits.maxBufferedBytes. */
  budget: BufferBudget;
  /** The command table with this proxy's allow-list applied. */
  commands: CommandBook;
  /** How long an agent may take to answer one command. */
  requestTimeoutMs: number;
  /** How long SUBSCRIBE waits for an agent to confirm before confirming anyway. */
  subscribeTimeoutMs: number;
  logger: Logger;
  metrics: ConnectionMetrics;
  /** Set when traces are exported: a span per command sent to an agent. */
  tracer?: Tracer | undefined;
  nextClientId(): number;
}
