import { status } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Authenticator, ConnectionLookup } from './caller-auth.js';
import type { FrameCall } from './frame-call.js';
import type { GatewayMetrics } from './metrics.js';

export interface StrayCallOptions {
  /** The listener that received the call ("agents", "internal"). */
  listener: string;
  /** The method path that is not served here. */
  path: string;
  /** What the caller is told; by default, that the method is not served on this listener. */
  details?: string;
  /** The listener's own authenticator, run only to say who tried. */
  identify: Authenticator;
  connections?: ConnectionLookup;
  logger: Logger;
  metrics: GatewayMetrics;
}

/**
 * A handler for a method this listener deliberately does not serve (Link on the agent
 * listener, Connect on the internal one, the retired Forward on both): answered UNIMPLEMENTED,
 * as grpc-js answers any unknown method, and logged with the caller, because nobody legitimate
 * ever calls it.
 */
export function refuseStrayCalls(opts: StrayCallOptions): (call: FrameCall) => void {
  return (call) => {
    const ctx = call.context(opts.connections);
    const refuse = (identity: Record<string, unknown>) => {
      opts.metrics.strayCalls.inc({ listener: opts.listener });
      opts.logger.warn(
        { listener: opts.listener, method: opts.path, remote: ctx.remote, ...identity },
        'refused a call to a service this listener does not serve',
      );
      call.refuse(status.UNIMPLEMENTED, opts.details ?? `${opts.path} is not served on this listener`);
    };
    Promise.resolve()
      .then(() => opts.identify(ctx))
      .then(
        (who) =>
          refuse(
            who.ok ? { identity: who.identity, credential: who.credential } : { identityRefused: who.code },
          ),
        () => refuse({}),
      );
  };
}
