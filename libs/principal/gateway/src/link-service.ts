import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import type { Tracer } from '@opentelemetry/api';
import { frame, type Open, PROTOCOL_VERSION_MAX, resetFrame } from '@pullplane/proto';
import {
  isTunnelError,
  Multiplexer,
  routeRefusalCode,
  TunnelError,
  TunnelErrorCode,
} from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { AgentSession } from './agent-session.js';
import type { Authenticator, ConnectionLookup } from './caller-auth.js';
import type { FrameCall } from './frame-call.js';
import type { GatewayMetrics } from './metrics.js';
import type { RelayCreditQueue } from './relay-credit.js';
import { endRelaySpan, startRelaySpan } from './relay-span.js';
import { StreamRelay } from './stream-relay.js';

export interface LinkServiceOptions {
  gatewayId: string;
  authenticate: Authenticator;
  connections?: ConnectionLookup;
  /** The agent session held here, if any. */
  session: (agent: string) => AgentSession | undefined;
  /** The agents' tunnel settings: a link's streams use the same, so credit passes end to end. */
  maxChunkSize: number;
  initialWindow: number;
  /** Relayed streams holding back credit until the relay budgets have room (one per process). */
  credit: RelayCreditQueue;
  /** Open links, each by the function that closes it (the gateway closes them when it stops). */
  links: Set<(reason: string) => void>;
  logger: Logger;
  metrics: GatewayMetrics;
  tracer?: Tracer | undefined;
}

/**
 * GatewayForward.Link: a proxy replica's persistent link. Authenticated once per call (the TLS
 * identity cannot change on a connection); then each Open is relayed to the agent's tunnel, or
 * answered Reset NO_ROUTE when this gateway cannot reach the agent, so the proxy retries at the
 * gateway that holds it now.
 */
export function createLinkHandler(opts: LinkServiceOptions): (call: FrameCall) => void {
  return (call) => {
    admitInternalCall(call, opts).then(
      (ok) => {
        if (ok) serveLink(call, opts);
      },
      (err: unknown) => opts.logger.error({ err: String(err) }, 'link handler failed'),
    );
  };
}

/**
 * Authenticates and authorises a call on the internal listener, once per call (the TLS identity
 * cannot change on a connection); a refused call is answered with its gRPC status and false.
 */
async function admitInternalCall(
  call: FrameCall,
  opts: Pick<LinkServiceOptions, 'authenticate' | 'connections' | 'logger' | 'metrics'>,
): Promise<boolean> {
  const auth = await opts.authenticate(call.context(opts.connections));
  if (auth.ok) return true;
  opts.metrics.internalAuthFailures.inc({ code: auth.code });
  opts.logger.warn({ code: auth.code, reason: auth.reason, remote: call.remote }, 'internal caller rejected');
  call.refuse(
    auth.code === 'INTERNAL_CALLER_NOT_ALLOWED' ? status.PERMISSION_DENIED : status.UNAUTHENTICATED,
    auth.reason,
  );
  return false;
}

function serveLink(call: FrameCall, opts: LinkServiceOptions): void {
  const linkId = randomUUID();
  const log = opts.logger.child({ link: linkId, remote: call.remote });
  const sink = call.sink;
  const mux: Multiplexer = new Multiplexer({
    sink,
    idParity: 'even',
    maxChunkSize: opts.maxChunkSize,
    initialWindow: opts.initialWindow,
    // Streams to every agent held here share a link; each agent's tunnel keeps its own cap.
    maxConcurrentStreams: 65_536,
    onOpen: (open) => relayOpen(open),
  });
  opts.metrics.linksOpen.inc();
  sink.send(
    frame({
      case: 'welcome',
      value: {
        protocolVersion: PROTOCOL_VERSION_MAX,
        gatewayId: opts.gatewayId,
        sessionId: linkId,
        maxChunkSize: mux.maxChunkSize,
        initialWindow: mux.initialWindow,
      },
    }),
  );
  log.debug('proxy link open');

  // Nothing was relayed: a refusal that another gateway may mend is a route refusal.
  const refuse = (open: Open, err: TunnelError) => {
    opts.metrics.forwardRejected.inc({ code: err.code });
    mux.send(resetFrame(open.streamId, routeRefusalCode(err), err.message));
  };

  function relayOpen(open: Open): void {
    const session = open.agent ? opts.session(open.agent) : undefined;
    const tunnel = session?.mux;
    if (!session || session.closed || !tunnel || tunnel.closed || tunnel.isGoingAway) {
      refuse(
        open,
        new TunnelError(
          TunnelErrorCode.NOT_FOUND,
          `agent ${open.agent} is not connected to gateway ${opts.gatewayId}`,
        ),
      );
      return;
    }
    const span = opts.tracer ? startRelaySpan(opts.tracer, open, opts.gatewayId) : undefined;
    try {
      new StreamRelay(open, {
        link: mux,
        tunnel,
        budget: session.relayBudget,
        credit: opts.credit,
        span,
        onBudgetExceeded: (scope) => {
          opts.metrics.relayBudgetResets.inc({ scope });
          log.warn(
            { agent: open.agent, scope, requestId: open.requestId },
            'relayed stream reset: relay memory budget',
          );
        },
        onDone: (_relay, err) => {
          opts.metrics.relayedStreams.dec();
          if (span) endRelaySpan(span, err);
        },
      });
    } catch (err) {
      const e = isTunnelError(err) ? err : new TunnelError(TunnelErrorCode.INTERNAL, String(err));
      if (span) endRelaySpan(span, e);
      // The tunnel going away between the check and here is still a route refusal.
      refuse(open, e);
      return;
    }
    opts.metrics.forwardedStreams.inc();
    opts.metrics.relayedStreams.inc();
  }

  mux.on('protocol-error', (msg) => log.warn({ reason: msg }, 'proxy link protocol error'));
  let closed = false;
  const close = (reason: string) => {
    if (closed) return;
    closed = true;
    opts.links.delete(close);
    opts.metrics.linksOpen.dec();
    mux.close(new TunnelError(TunnelErrorCode.CANCELLED, reason));
    call.end();
    log.debug({ reason }, 'proxy link closed');
  };
  opts.links.add(close);
  call.serve(
    (f) => mux.receive(f),
    (how, err) =>
      close(
        how === 'ended'
          ? 'proxy ended the link'
          : how === 'cancelled'
            ? 'proxy cancelled the link'
            : how === 'failed'
              ? `link failed: ${err?.message}`
              : 'link closed',
      ),
  );
}
