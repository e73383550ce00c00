import type { Bus } from './types.js';

export interface RevocationHandlers {
  /** An agent was revoked: every credential of it is refused from now on. */
  agentRevoked(agent: string, reason: string): void;
  /** One token was revoked, by `jti`. */
  tokenRevoked(jti: string): void;
}

/**
 * Feeds every revocation to `handlers`: the durable ones already stored (so a restarted
 * service refuses what was revoked before it started), new ones as they are stored, and the
 * control events that announce them (which arrive even while the store lags). Handlers must
 * be idempotent: each revocation usually arrives twice. Returns a function that stops it.
 */
export async function followRevocations(bus: Bus, handlers: RevocationHandlers): Promise<() => void> {
  const stopStore = await bus.revocations.watch((r) => {
    if (r.kind === 'token') handlers.tokenRevoked(r.jti);
    else handlers.agentRevoked(r.agent, r.reason);
  });
  const stopControl = bus.control.subscribe((ev) => {
    if (ev.type === 'agent-revoked') handlers.agentRevoked(ev.agent, ev.reason);
    else if (ev.type === 'token-denied') handlers.tokenRevoked(ev.jti);
  });
  return () => {
    stopStore();
    stopControl();
  };
}
