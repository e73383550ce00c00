import { EventEmitter } from 'node:events';
import { Metadata, status } from '@grpc/grpc-js';
import {
  type CallStatus,
  FrameClient,
  type FrameClientCall,
  type TunnelCredentials,
} from '@pullplane/grpc-frames';
import {
  AGENT_TUNNEL_CONNECT_PATH,
  type Frame,
  frame,
  PROTOCOL_VERSION_MAX,
  PROTOCOL_VERSION_MIN,
  type Registration,
  type Welcome,
} from '@pullplane/proto';
import { type LogicalStream, Multiplexer, TunnelError, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';

export interface TunnelConnectorOptions {
  agentName: string;
  agentVersion: string;
  /** host:port of the gateway (usually a Service in front of several replicas). */
  target: string;
  /** A function is asked on every connect, so rotated certificates apply to the next tunnel. */
  credentials: TunnelCredentials | (() => TunnelCredentials);
  /** Per-connection metadata: a bearer token, or nothing (mTLS / mesh identity). */
  metadata?: () => Metadata | Promise<Metadata>;
  /** TLS server name override (e.g. when dialling an IP). */
  serverNameOverride?: string;
  heartbeatIntervalMs: number;
  /** HTTP/2 keepalive pings; 0 disables them. Meshes ignore them, hence the heartbeats. */
  keepAlivePingIntervalMs: number;
  capabilities: string[];
  onStream: (stream: LogicalStream) => void;
  logger: Logger;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  welcomeTimeoutMs?: number;
}

type SessionEnd = { connected: boolean; goaway: boolean; reason: string; fatal?: boolean };

export interface ConnectorEvents {
  connected: [Welcome];
  disconnected: [string];
  /** The gateway refused the agent's credentials (UNAUTHENTICATED or PERMISSION_DENIED). */
  rejected: [string];
  /** The gateway says whether this agent's cluster is registered with Argo CD. */
  registration: [Registration];
}

/**
 * Keeps one tunnel to the gateway open: dials out, says Hello, serves streams, sends
 * heartbeats, and reconnects with exponential backoff and full jitter. A GoAway makes it
 * dial a fresh connection at once while the old one finishes its in-flight streams.
 */
export class TunnelConnector extends EventEmitter<ConnectorEvents> {
  private stopped = true;
  private loop: Promise<void> | undefined;
  private current: { mux: Multiplexer; call: FrameClientCall; client: FrameClient } | undefined;
  private readonly draining = new Set<{ call: FrameClientCall; client: FrameClient }>();
  private welcome: Welcome | undefined;
  private wake: (() => void) | undefined;
  private attempt: { call: FrameClientCall; client: FrameClient } | undefined;

  constructor(private readonly opts: TunnelConnectorOptions) {
    super();
  }

  get connected(): boolean {
    return this.current !== undefined && this.welcome !== undefined;
  }

  get session(): Welcome | undefined {
    return this.welcome;
  }

  get activeStreams(): number {
    return this.current?.mux.activeStreams ?? 0;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    const cur = this.current;
    if (cur) {
      cur.mux.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, 'agent shutting down'));
      // Cancel rather than half-close: the session loop must end even if the gateway never
      // answers (it sees the cancellation and drops the session at once).
      cur.call.cancel();
      cur.client.close();
    }
    for (const d of this.draining) {
      d.call.cancel();
      d.client.close();
    }
    if (this.attempt && this.attempt.call !== cur?.call) {
      this.attempt.call.cancel();
      this.attempt.client.destroy();
    }
    await this.loop;
  }

  private async run(): Promise<void> {
    const initial = this.opts.backoffInitialMs ?? 500;
    const cap = this.opts.backoffMaxMs ?? 30_000;
    let attempt = 0;
    while (!this.stopped) {
      const end = await this.session_().catch(
        (err: unknown): SessionEnd => ({ connected: false, goaway: false, reason: String(err) }),
      );
      if (this.stopped) break;
      this.emit('disconnected', end.reason);
      if (end.connected) attempt = 0;
      if (end.goaway) continue;
      // Full jitter: a whole fleet reconnecting after a gateway loss spreads out.
      const delay = Math.random() * Math.min(cap, initial * 2 ** attempt);
      attempt++;
      this.opts.logger[end.connected ? 'info' : 'warn'](
        { reason: end.reason, retryInMs: Math.round(delay) },
        end.connected ? 'tunnel closed; reconnecting' : 'could not connect to gateway; retrying',
      );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  private async session_(): Promise<SessionEnd> {
    const o = this.opts;
    const creds = typeof o.credentials === 'function' ? o.credentials() : o.credentials;
    // A client, and so a connection, of its own per session: after a GoAway the next session
    // must not share the draining gateway's connection.
    const client = new FrameClient({
      target: o.target,
      credentials: creds,
      serverNameOverride: o.serverNameOverride,
      keepAliveIntervalMs: o.keepAlivePingIntervalMs,
      keepAliveTimeoutMs: 10_000,
      userAgent: `pullplane-agent/${o.agentVersion}`,
    });
    const md = (await o.metadata?.()) ?? new Metadata();
    if (this.stopped) {
      client.close();
      return { connected: false, goaway: false, reason: 'stopping' };
    }
    let onFrame: (f: Frame) => void = () => undefined;
    let onEnd: (end: CallStatus) => void = () => undefined;
    const call = client.call(AGENT_TUNNEL_CONNECT_PATH, md, {
      onFrame: (f) => onFrame(f),
      onEnd: (end) => onEnd(end),
    });
    // stop() must be able to end a tunnel that is still being set up, not just the current one.
    this.attempt = { call, client };
    return new Promise<SessionEnd>((resolve) => {
      let connected = false;
      let settled = false;
      let lastFrameAt = Date.now();
      let lastPingAt = 0;
      let heartbeat: NodeJS.Timeout | undefined;
      const mux = new Multiplexer({ sink: call.sink, idParity: 'even', onStream: o.onStream });
      const finish = (end: SessionEnd) => {
        clearInterval(heartbeat);
        clearTimeout(welcomeTimer);
        if (!settled) {
          settled = true;
          resolve(end);
        }
      };
      const teardown = (reason: string) => {
        mux.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, reason));
        if (this.current?.call === call) {
          this.current = undefined;
          this.welcome = undefined;
        }
        client.destroy();
        finish({ connected, goaway: false, reason });
      };
      const welcomeTimer = setTimeout(() => {
        call.cancel();
        teardown('gateway sent no Welcome in time');
      }, o.welcomeTimeoutMs ?? 10_000);

      onFrame = (f: Frame) => {
        lastFrameAt = Date.now();
        if (!connected) {
          if (f.kind.case !== 'welcome') {
            call.cancel();
            teardown(`gateway opened with ${f.kind.case ?? 'an empty'} frame instead of Welcome`);
            return;
          }
          if (this.stopped) {
            call.cancel();
            teardown('stopping');
            return;
          }
          connected = true;
          clearTimeout(welcomeTimer);
          mux.adopt({
            maxChunkSize: f.kind.value.maxChunkSize,
            initialWindow: f.kind.value.initialWindow,
            protocolVersion: f.kind.value.protocolVersion,
          });
          this.welcome = f.kind.value;
          this.current = { mux, call, client };
          o.logger.info(
            {
              gateway: f.kind.value.gatewayId,
              session: f.kind.value.sessionId,
              protocol: f.kind.value.protocolVersion,
            },
            'tunnel established',
          );
          this.emit('connected', f.kind.value);
          heartbeat = setInterval(() => {
            // No frame at all since a ping sent long enough ago: the stream is dead even if TCP
            // is not. Measured in time, not ticks, because timers bunch up under load.
            const silentFor = Date.now() - lastPingAt;
            if (
              lastPingAt > 0 &&
              lastFrameAt < lastPingAt &&
              silentFor >= Math.max(o.heartbeatIntervalMs, 2_000)
            ) {
              o.logger.warn(
                { heartbeatIntervalMs: o.heartbeatIntervalMs },
                'gateway missed a heartbeat; reconnecting',
              );
              call.cancel();
              teardown('missed heartbeat');
              return;
            }
            if (lastFrameAt >= lastPingAt || lastPingAt === 0) {
              lastPingAt = Date.now();
              mux.ping();
            }
          }, o.heartbeatIntervalMs);
          heartbeat.unref();
          return;
        }
        mux.receive(f);
      };
      mux.on('registration', (r) => this.emit('registration', r));
      mux.on('goaway', (g) => {
        o.logger.info({ reason: g.reason, drainMs: g.drainMs }, 'gateway asked us to move; reconnecting');
        // Keep serving in-flight streams on the old tunnel while a new one is dialled.
        const old = { call, client };
        this.draining.add(old);
        if (this.current?.call === call) {
          this.current = undefined;
          this.welcome = undefined;
        }
        clearInterval(heartbeat);
        const closeOld = () => {
          this.draining.delete(old);
          mux.close(new TunnelError(TunnelErrorCode.GOING_AWAY, g.reason));
          call.end();
          client.close();
        };
        const deadline = Date.now() + g.drainMs;
        const poll = setInterval(() => {
          if (mux.activeStreams === 0 || Date.now() >= deadline || this.stopped) {
            clearInterval(poll);
            closeOld();
          }
        }, 50);
        finish({ connected: true, goaway: true, reason: `goaway: ${g.reason}` });
      });
      onEnd = (end: CallStatus) => {
        if (end.code === status.OK) {
          teardown('gateway closed the tunnel');
          return;
        }
        const fatal = end.code === status.UNAUTHENTICATED || end.code === status.PERMISSION_DENIED;
        if (fatal) {
          o.logger.error({ code: end.code, details: end.details }, 'gateway refused this agent');
          this.emit('rejected', end.details);
        }
        if (end.code === status.FAILED_PRECONDITION)
          o.logger.error({ details: end.details }, 'protocol mismatch');
        teardown(`${status[end.code] ?? end.code}: ${end.details}`);
      };
      call.write(
        frame({
          case: 'hello',
          value: {
            minProtocolVersion: PROTOCOL_VERSION_MIN,
            maxProtocolVersion: PROTOCOL_VERSION_MAX,
            agentVersion: o.agentVersion,
            agentName: o.agentName,
            heartbeatIntervalMs: o.heartbeatIntervalMs,
            capabilities: o.capabilities,
          },
        }),
      );
    });
  }
}
