import { type ServerDuplexStream, status } from '@grpc/grpc-js';
import { type Frame, frame, type Hello, negotiateVersion } from '@pullplane/proto';
import type { WindowBudget } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { AgentLimits } from './agent-limits.js';
import { AgentSession, type AgentSessionOptions } from './agent-session.js';
import { type Authenticator, callContext } from './caller-auth.js';
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

type Call = ServerDuplexStream<Frame, Frame>;

function fail(call: Call, code: status, details: string): void {
  call.emit('error', { code, details, name: 'TunnelRejected', message: details });
}

/** AgentTunnel.Connect: authenticate, negotiate the protocol, then run the session. */
export function createTunnelHandler(opts: TunnelServiceOptions): (call: Call) => void {
  return (call) => {
    void accept(call, opts).catch((err: unknown) => {
      opts.logger.error({ err: String(err) }, 'tunnel handshake failed');
      fail(call, status.INTERNAL, 'tunnel handshake failed');
    });
  };
}

async function accept(call: Call, opts: TunnelServiceOptions): Promise<void> {
  const ctx = callContext(call);
  const log = opts.logger.child({ remote: ctx.remote });
  if (!opts.isAccepting()) {
    fail(call, status.UNAVAILABLE, 'gateway is shutting down; reconnect to another replica');
    return;
  }
  const auth = await opts.authenticate(ctx);
  if (!auth.ok) {
    opts.metrics.authFailures.inc({ code: auth.code });
    log.warn({ code: auth.code, reason: auth.reason }, 'agent authentication failed');
    fail(call, status.UNAUTHENTICATED, `authentication failed: ${auth.reason}`);
    return;
  }
  const agent = auth.identity;
  const credential = auth.credential ?? 'agent';
  if (credential !== 'agent' && credential !== 'unmarked') {
    // Authenticators refuse other kinds already; this keeps a misconfigured one from opening tunnels.
    opts.metrics.authFailures.inc({ code: 'AUTH_CREDENTIAL_WRONG_KIND' });
    log.warn({ agent, credential }, 'a non-agent credential tried to open a tunnel');
    fail(
      call,
      status.UNAUTHENTICATED,
      `authentication failed: a ${credential} credential cannot open a tunnel`,
    );
    return;
  }
  if (opts.isRevoked?.(agent)) {
    opts.metrics.authFailures.inc({ code: 'AGENT_REVOKED' });
    log.warn({ agent }, 'revoked agent tried to connect');
    fail(call, status.PERMISSION_DENIED, `agent ${agent} has been revoked`);
    return;
  }
  const hello = await readHello(call, opts.helloTimeoutMs);
  if (!hello) {
    log.warn({ agent }, 'agent did not open with a Hello frame');
    fail(call, status.INVALID_ARGUMENT, `expected a Hello frame first, within ${opts.helloTimeoutMs} ms`);
    return;
  }
  if (hello.agentName && hello.agentName !== agent) {
    log.warn({ agent, claimed: hello.agentName }, 'agent name does not match its authenticated identity');
    fail(
      call,
      status.PERMISSION_DENIED,
      `agent calls itself "${hello.agentName}" but authenticated as "${agent}"`,
    );
    return;
  }
  const version = negotiateVersion(hello.minProtocolVersion, hello.maxProtocolVersion);
  if (!version.ok) {
    log.warn({ agent, reason: version.message }, 'protocol negotiation failed');
    fail(call, status.FAILED_PRECONDITION, version.message);
    return;
  }
  const refused = opts.refusal?.(agent, credential);
  if (refused) {
    opts.metrics.authFailures.inc({ code: 'TUNNEL_HELD_BY_STRONGER_CREDENTIAL' });
    log.warn({ agent, credential, reason: refused }, 'security: refused to replace a tunnel');
    fail(call, status.PERMISSION_DENIED, refused);
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
  call.write(
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

function readHello(call: Call, timeoutMs: number): Promise<Hello | undefined> {
  return new Promise((resolve) => {
    const done = (h: Hello | undefined) => {
      clearTimeout(timer);
      call.off('data', onData);
      call.off('end', onEnd);
      call.off('error', onEnd);
      resolve(h);
    };
    const onData = (f: Frame) => {
      // Hold further frames until the session attaches its own reader.
      call.pause();
      done(f.kind.case === 'hello' ? f.kind.value : undefined);
    };
    const onEnd = () => done(undefined);
    const timer = setTimeout(() => done(undefined), timeoutMs);
    call.once('data', onData);
    call.once('end', onEnd);
    call.once('error', onEnd);
  });
}
