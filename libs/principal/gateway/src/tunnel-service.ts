import { status } from '@grpc/grpc-js';
import { frame, negotiateVersion } from '@pullplane/proto';
import type { WindowBudget } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { AgentLimits } from './agent-limits.js';
import { AgentSession, type AgentSessionOptions } from './agent-session.js';
import type { Authenticator } from './caller-auth.js';
import type { FrameCall } from './frame-call.js';
import type { GatewayMetrics } from './metrics.js';

export interface TunnelServiceOptions {
  gatewayId: string;
  authenticate: Authenticator;
  logger: Logger;
  metrics: GatewayMetrics;
  maxChunkSize: number;
  initialWindow: number;
  /** The process's budget for window growth, shared by every session. */
  windowBudget: WindowBudget;
  /** The process's relay budget: each session's share counts in it. */
  relayBudget: WindowBudget;
  limits: AgentLimits;
  /** How long a freshly connected agent has to send its Hello. */
  helloTimeoutMs: number;
  /** Floor for the idle timeout; the timeout is three heartbeat intervals above that. */
  minIdleTimeoutMs: number;
  isAccepting: () => boolean;
  /** Revoked agents are refused even with valid credentials (certificates cannot be recalled). */
  isRevoked?: (agent: string) => boolean;
  /** Why this credential may not take the agent's name now (a stronger one holds it), if so. */
  refusal?: (agent: string, credential: 'agent' | 'unmarked') => string | undefined;
  onSession: (session: AgentSession) => void;
  sessionHooks: Pick<
    AgentSessionOptions,
    'onHeartbeat' | 'onClosed' | 'onRtt' | 'onViolation' | 'onViolationsExceeded'
  >;
}

/** AgentTunnel.Connect: authenticate, negotiate the protocol, then run the session. */
export function createTunnelHandler(opts: TunnelServiceOptions): (call: FrameCall) => void {
  return (call) => {
    void accept(call, opts).catch((err: unknown) => {
      opts.logger.error({ err: String(err) }, 'tunnel handshake failed');
      call.refuse(status.INTERNAL, 'tunnel handshake failed');
    });
  };
}

async function accept(call: FrameCall, opts: TunnelServiceOptions): Promise<void> {
  const ctx = call.context();
  const log = opts.logger.child({ remote: ctx.remote });
  if (!opts.isAccepting()) {
    call.refuse(status.UNAVAILABLE, 'gateway is shutting down; reconnect to another replica');
    return;
  }
  const auth = await opts.authenticate(ctx);
  if (!auth.ok) {
    opts.metrics.authFailures.inc({ code: auth.code });
    log.warn({ code: auth.code, reason: auth.reason }, 'agent authentication failed');
    call.refuse(status.UNAUTHENTICATED, `authentication failed: ${auth.reason}`);
    return;
  }
  const agent = auth.identity;
  const credential = auth.credential ?? 'agent';
  if (credential !== 'agent' && credential !== 'unmarked') {
    // Authenticators refuse other kinds already; this keeps a misconfigured one from opening tunnels.
    opts.metrics.authFailures.inc({ code: 'AUTH_CREDENTIAL_WRONG_KIND' });
    log.warn({ agent, credential }, 'a non-agent credential tried to open a tunnel');
    call.refuse(
      status.UNAUTHENTICATED,
      `authentication failed: a ${credential} credential cannot open a tunnel`,
    );
    return;
  }
  if (opts.isRevoked?.(agent)) {
    opts.metrics.authFailures.inc({ code: 'AGENT_REVOKED' });
    log.warn({ agent }, 'revoked agent tried to connect');
    call.refuse(status.PERMISSION_DENIED, `agent ${agent} has been revoked`);
    return;
  }
  const first = await call.firstFrame(opts.helloTimeoutMs);
  const hello = first?.kind.case === 'hello' ? first.kind.value : undefined;
  if (!hello) {
    log.warn({ agent }, 'agent did not open with a Hello frame');
    call.refuse(status.INVALID_ARGUMENT, `expected a Hello frame first, within ${opts.helloTimeoutMs} ms`);
    return;
  }
  if (hello.agentName && hello.agentName !== agent) {
    log.warn({ agent, claimed: hello.agentName }, 'agent name does not match its authenticated identity');
    call.refuse(
      status.PERMISSION_DENIED,
      `agent calls itself "${hello.agentName}" but authenticated as "${agent}"`,
    );
    return;
  }
  const version = negotiateVersion(hello.minProtocolVersion, hello.maxProtocolVersion);
  if (!version.ok) {
    log.warn({ agent, reason: version.message }, 'protocol negotiation failed');
    call.refuse(status.FAILED_PRECONDITION, version.message);
    return;
  }
  const refused = opts.refusal?.(agent, credential);
  if (refused) {
    opts.metrics.authFailures.inc({ code: 'TUNNEL_HELD_BY_STRONGER_CREDENTIAL' });
    log.warn({ agent, credential, reason: refused }, 'security: refused to replace a tunnel');
    call.refuse(status.PERMISSION_DENIED, refused);
    return;
  }
  const heartbeatIntervalMs = hello.heartbeatIntervalMs;
  const session = new AgentSession(
    {
      agent,
      agentVersion: hello.agentVersion,
      protocolVersion: version.version,
      heartbeatIntervalMs,
      capabilities: hello.capabilities,
      credential,
      remote: ctx.remote,
      ...(auth.tokenId ? { tokenId: auth.tokenId } : {}),
    },
    call,
    {
      maxChunkSize: opts.maxChunkSize,
      initialWindow: opts.initialWindow,
      processBudget: opts.windowBudget,
      processRelayBudget: opts.relayBudget,
      limits: opts.limits,
      idleTimeoutMs: Math.max(opts.minIdleTimeoutMs, heartbeatIntervalMs * 3),
      logger: opts.logger,
      ...opts.sessionHooks,
    },
  );
  // Alone in its message: the agent reads the first one as the Welcome.
  call.sink.send(
    frame({
      case: 'welcome',
      value: {
        protocolVersion: version.version,
        gatewayId: opts.gatewayId,
        sessionId: session.sessionId,
        maxChunkSize: opts.maxChunkSize,
        initialWindow: opts.initialWindow,
      },
    }),
  );
  call.sink.flush();
  log.info(
    {
      agent,
      session: session.sessionId,
      agentVersion: hello.agentVersion,
      protocol: version.version,
      credential,
    },
    'agent connected',
  );
  opts.metrics.argocdAgent.connected(agent);
  if (credential === 'unmarked') {
    log.warn(
      { agent },
      'agent authenticated with a certificate that carries no credential kind (legacy opt-in)',
    );
  }
  opts.onSession(session);
}
