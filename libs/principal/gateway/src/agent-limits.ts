import {
  DEFAULT_MAX_RESPONSE_HEADER_BYTES,
  DEFAULT_MAX_RESPONSE_HEADERS,
  type HeadLimits,
  MAX_RESPONSE_HEADER_BYTES_LIMIT,
} from '@pullplane/proto';

/** The highest header-bytes limit a gateway may be given: the largest head must fit in one message. */
export const MAX_AGENT_RESPONSE_HEADER_BYTES = MAX_RESPONSE_HEADER_BYTES_LIMIT;

import type { PeerViolation } from '@pullplane/tunnel';

/** What the gateway holds each agent to: agents run in the least trusted place of the system. */
export interface AgentLimits {
  /** What one ResponseHead may carry. */
  head: HeadLimits;
  /** Protocol violations within `violationWindowMs` after which the agent's tunnel is closed. */
  maxViolations: number;
  violationWindowMs: number;
  /**
   * Bytes of one agent's relayed streams that may wait in transport queues (its share of the
   * process's relay budget), so one agent cannot take the memory others' streams need.
   */
  relayShareBytes: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  head: { maxHeaders: DEFAULT_MAX_RESPONSE_HEADERS, maxHeaderBytes: DEFAULT_MAX_RESPONSE_HEADER_BYTES },
  maxViolations: 10,
  violationWindowMs: 60_000,
  relayShareBytes: 16 * 1024 * 1024,
};

/**
 * Counts one session's protocol violations over a sliding window. Each violation already cost
 * the stream it concerned; an agent that keeps breaking the protocol is misbehaving on purpose
 * or broken, and its tunnel is closed.
 */
export class ViolationCounter {
  private readonly recent: number[] = [];

  constructor(private readonly limits: Pick<AgentLimits, 'maxViolations' | 'violationWindowMs'>) {}

  /** Records one; returns how many fell within the window if that is over the limit. */
  record(_v: PeerViolation, now = Date.now()): number | undefined {
    const since = now - this.limits.violationWindowMs;
    while (this.recent.length > 0 && (this.recent[0] ?? 0) <= since) this.recent.shift();
    this.recent.push(now);
    return this.recent.length > this.limits.maxViolations ? this.recent.length : undefined;
  }
}
