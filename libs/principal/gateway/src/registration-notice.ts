import { frame } from '@pullplane/proto';
import type { EnsureResult } from '@pullplane/registration';
import type { AgentSession } from './agent-session.js';

/** The Hello capability of agents that understand the Registration frame. */
export const REGISTRATION_CAPABILITY = 'registration';

/**
 * Tells an agent whether its cluster is registered with Argo CD, so it can report it (a
 * ClusterAgent's Registered condition). Only agents that announced the capability are told:
 * older ones would take the frame for a protocol error.
 */
export function tellRegistration(
  session: AgentSession | undefined,
  outcome: { result: EnsureResult; secret: string; server: string } | { error: string },
): void {
  if (!session?.info.capabilities.includes(REGISTRATION_CAPABILITY)) return;
  const value =
    'error' in outcome
      ? { registered: false, message: outcome.error }
      : outcome.result === 'foreign'
        ? {
            registered: false,
            message: `${outcome.secret} exists and is not managed by pullplane; delete or rename it`,
          }
        : { registered: true, clusterSecret: outcome.secret, server: outcome.server };
  session.mux.send(frame({ case: 'registration', value }));
}
