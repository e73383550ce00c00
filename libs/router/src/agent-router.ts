import { create } from '@bufbuild/protobuf';
import { type ChannelCredentials, Client, Metadata } from '@grpc/grpc-js';
import type { Bus, PresenceRecord } from '@pullplane/bus';
import {
  decodeFrame,
  encodeFrame,
  type Frame,
  GATEWAY_FORWARD_PATH,
  type Open,
  OpenSchema,
} from '@pullplane/proto';
import type { OpenInit, TunnelStream } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { agentNotConnected } from './errors.js';
import { ForwardedStream, type ForwardTarget } from './forwarded-stream.js';
import { gatewayChannelOptions } from './gateway-channel-options.js';

/** A gateway in this very process (single-process mode): no network hop. */
export interface LocalGateway {
  readonly gatewayId: string;
  openLocal(agent: string, open: Open): TunnelStream;
}

export interface AgentRouterOptions {
  bus: Bus;
  logger: Logger;
  /** Credentials towards gateways' internal listeners (mTLS, or insecure behind a mesh). */
  credentials: ChannelCredentials;
  /** Extra metadata on every forward call (e.g. a token for the internal listener). */
  metadata?: () => Metadata;
  local?: LocalGateway;
  /** How long a non-streaming open may spend finding the agent across stale routes. */
  routeTimeoutMs?: number;
  /**
   * Name to verify in gateways' certificates: they are dialled by pod IP, so a certificate
   * naming the internal Service (not each IP) needs this override.
   */
  serverNameOverride?: string;
  maxChunkSize?: number;
}

export interface RouteOpenInit extends Omit<OpenInit, 'agent'> {
  /** Overrides the routing deadline (ms since epoch). */
  routeDeadline?: number;
}

/**
 * The proxy side of routing: a local table of which gateway holds which agent, fed by a
 * presence watch, and streams opened straight to that gateway over HTTP/2. When no gateway
 * holds an agent the caller learns it at once, without a timeout.
 */
export class AgentRouter {
  private readonly table = new Map<string, PresenceRecord>();
  private readonly clients = new Map<string, Client>();
  private stopWatch: (() => void) | undefined;

  constructor(private readonly opts: AgentRouterOptions) {}

  async start(): Promise<void> {
    this.stopWatch = await this.opts.bus.presence.watch((ev) => {
      if (ev.type === 'put') this.table.set(ev.record.agent, ev.record);
      else this.table.delete(ev.agent);
    });
  }

  stop(): void {
    this.stopWatch?.();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  lookup(agent: string): PresenceRecord | undefined {
    return this.table.get(agent);
  }

  agents(): PresenceRecord[] {
    return [...this.table.values()];
  }

  /**
   * Opens a logical stream to `agent`. Throws a NOT_FOUND TunnelError synchronously when no
   * gateway holds it; later failures arrive through the stream.
   */
  open(agent: string, init: RouteOpenInit): TunnelStream {
    const record = this.table.get(agent);
    if (!record) throw agentNotConnected(agent);
    const { routeDeadline, ...rest } = init;
    const open = create(OpenSchema, { ...rest, agent, streamId: 1 });
    const local = this.opts.local;
    if (local && record.gatewayId === local.gatewayId) return local.openLocal(agent, open);
    const deadline = routeDeadline ?? Date.now() + (this.opts.routeTimeoutMs ?? 10_000);
    return new ForwardedStream({
      open,
      target: this.target(record),
      retarget: (failed) => this.retarget(agent, failed),
      deadline,
      maxChunkSize: this.opts.maxChunkSize ?? 64 * 1024,
    });
  }

  private target(record: PresenceRecord): ForwardTarget {
    const client = this.client(record.internalAddress);
    return {
      address: record.internalAddress,
      sessionId: record.sessionId,
      call: () =>
        client.makeBidiStreamRequest<Frame, Frame>(
          GATEWAY_FORWARD_PATH,
          encodeFrame,
          decodeFrame,
          this.opts.metadata?.() ?? new Metadata(),
        ),
    };
  }

  /** Asks the store itself (not the local table) where the agent is now. */
  private async retarget(agent: string, failed: ForwardTarget): Promise<ForwardTarget | undefined> {
    this.opts.logger.info({ agent, gateway: failed.address }, 'route to agent failed; checking presence');
    const fresh = await this.opts.bus.presence.get(agent).catch(() => this.table.get(agent));
    if (!fresh || (fresh.sessionId === failed.sessionId && fresh.internalAddress === failed.address)) {
      // Give a reconnecting agent a moment: its new presence may be about to land.
      await new Promise((r) => setTimeout(r, 200));
      const again = this.table.get(agent);
      if (!again || (again.sessionId === failed.sessionId && again.internalAddress === failed.address))
        return undefined;
      return this.target(again);
    }
    this.table.set(agent, fresh);
    return this.target(fresh);
  }

  private client(address: string): Client {
    let c = this.clients.get(address);
    if (!c) {
      c = new Client(
        address,
        this.opts.credentials,
        gatewayChannelOptions({ serverNameOverride: this.opts.serverNameOverride }),
      );
      this.clients.set(address, c);
    }
    return c;
  }
}
