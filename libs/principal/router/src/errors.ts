import { TunnelError, TunnelErrorCode } from '@pullplane/tunnel';

/** The one wording proxies show when no gateway holds an agent (the seed's error table). */
export function agentNotConnected(agent: string): TunnelError {
  return new TunnelError(TunnelErrorCode.NOT_FOUND, `Agent is not connected: ${agent}`);
}
