import { InMemoryDenyList, OpenExchanges } from '@pullplane/auth';
import { type Bus, followRevocations } from '@pullplane/bus';
import type { Logger } from 'pino';

/** Who a proxy no longer serves, fed by the revocations on the bus. */
export interface CallerRevocations {
  /** Revoked caller tokens (by `jti`): give it to the token verifiers. */
  readonly denyList: InMemoryDenyList;
  /** The proxy's open exchanges: a revocation ends what its token or agent had open. */
  readonly openExchanges: OpenExchanges;
  /** A revoked agent is unreachable whatever the caller's credentials. */
  isRevoked(agent: string): boolean;
  stop(): void;
}

/** Caches of what was accepted, to forget along with a revocation. */
export interface RevocationForgetting {
  forgetAgent?(agent: string): void;
  forgetToken?(jti: string): void;
}

/**
 * Follows revocations from the bus, as the gateways get them: a revoked token is refused from
 * the next request on, a revoked agent is unreachable, and what either had open (watches,
 * `logs -f`, event streams, WebSockets) ends at once. `forget` is read at each revocation, so
 * caches built after this starts are included.
 */
export async function followCallerRevocations(
  bus: Bus,
  logger: Logger,
  forget: RevocationForgetting = {},
): Promise<CallerRevocations> {
  const denyList = new InMemoryDenyList();
  const revokedAgents = new Set<string>();
  const openExchanges = new OpenExchanges();
  const stop = await followRevocations(bus, {
    agentRevoked(agent, reason) {
      const ended = openExchanges.endAgent(agent, `agent ${agent} revoked: ${reason}`);
      if (ended > 0) logger.info({ agent, reason, ended }, 'ended open requests to a revoked agent');
      if (revokedAgents.has(agent)) return;
      revokedAgents.add(agent);
      forget.forgetAgent?.(agent);
      logger.info({ agent, reason }, 'agent revoked; refusing requests for it');
    },
    tokenRevoked(jti) {
      denyList.deny({ kind: 'token', jti });
      forget.forgetToken?.(jti);
      const ended = openExchanges.endToken(jti, `caller token ${jti} revoked`);
      if (ended > 0) logger.info({ jti, ended }, 'ended open requests of a revoked caller token');
    },
  });
  return { denyList, openExchanges, isRevoked: (agent) => revokedAgents.has(agent), stop };
}
