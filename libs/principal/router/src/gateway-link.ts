import { Metadata, status } from '@grpc/grpc-js';
import {
  type CallStatus,
  FrameClient,
  type FrameClientCall,
  type TunnelCredentials,
} from '@pullplane/grpc-frames';
import { type Frame, GATEWAY_LINK_PATH } from '@pullplane/proto';
import { Multiplexer, TunnelError, TunnelErrorCode, type WindowBudget } from '@pullplane/tunnel';
import type { LinkStream } from './link-stream.js';

export interface GatewayClientInit {
  /** Name to verify in the gateway's certificate when it is dialled by pod IP. */
  serverNameOverride?: string | undefined;
}

/**
 * A client towards one gateway's internal listener; its links share its connection. Keepalive
 * PINGs find a dead gateway between heartbeats; a connection lost is dialled again by the next
 * link, at once (presence, not backoff, decides whether the gateway is still worth dialling).
 */
export function gatewayClient(
  address: string,
  credentials: TunnelCredentials,
  init: GatewayClientInit = {},
): FrameClient {
  return new FrameClient({
    target: address,
    credentials,
    serverNameOverride: init.serverNameOverride,
    keepAliveIntervalMs: 20_000,
    keepAliveTimeoutMs: 5_000,
    maxSessionMemoryMb: 256,
    userAgent: 'pullplane-proxy',
  });
}

/** Streams one link may carry at once; the gateway holds its side of a link to the same number. */
export const LINK_MAX_CONCURRENT_STREAMS = 65_536;

export interface GatewayLinkOptions {
  address: string;
  client: FrameClient;
  /** Metadata of the call (e.g. a token for the internal listener). */
  metadata?: Metadata | undefined;
  /** Heartbeat period; a link that leaves one unanswered until the next is closed. */
  pingIntervalMs: number;
  /** Where the link's window growth is reserved and its buffered bytes counted (the router's, per link). */
  windowBudget?: WindowBudget | undefined;
  /**
   * After this long the link takes no new streams (the next is dialled, with metadata read
   * again: a rotated token) and closes once its streams are done. 0: never.
   */
  maxAgeMs?: number | undefined;
  onClosed: (link: GatewayLink, reason: TunnelError) => void;
}

/**
 * One persistent GatewayForward.Link call to a gateway, carrying many logical streams through a
 * multiplexer like an agent's tunnel. This module is the router's one contact with the wire:
 * the client and the call. Streams attached before the gateway's Welcome (which sets
 * the window and chunk size of the link) wait, detached, and leave together with it.
 */
export class GatewayLink {
  private readonly call: FrameClientCall;
  private mux: Multiplexer | undefined;
  private waiting: LinkStream[] = [];
  private closedWith: TunnelError | undefined;
  private readonly pingTimer: NodeJS.Timeout;
  private awaitingPong = false;
  private pongs = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private retireTimer: NodeJS.Timeout | undefined;
  private retired = false;

  constructor(private readonly opts: GatewayLinkOptions) {
    this.call = opts.client.call(GATEWAY_LINK_PATH, opts.metadata ?? new Metadata(), {
      onFrame: (f) => this.onFrame(f),
      onEnd: (end) => this.onCallEnd(end),
    });
    this.pingTimer = setInterval(() => this.heartbeat(), opts.pingIntervalMs);
    this.pingTimer.unref();
    if (opts.maxAgeMs && opts.maxAgeMs > 0) {
      this.retireTimer = setTimeout(() => {
        this.retired = true;
        this.closeIfRetiredAndIdle();
      }, opts.maxAgeMs);
      this.retireTimer.unref();
    }
  }

  get address(): string {
    return this.opts.address;
  }

  /** Takes new streams: not closed, not told to go away. */
  get usable(): boolean {
    return !this.closedWith && !this.mux?.isGoingAway && !this.retired;
  }

  get activeStreams(): number {
    return (this.mux?.activeStreams ?? 0) + this.waiting.length;
  }

  /** Sends a link stream's Open on this link (at once, or with the Welcome). Throws a TunnelError when it cannot. */
  attach(stream: LinkStream): void {
    if (this.closedWith) throw this.closedWith;
    stream.link = this;
    if (this.mux) this.mux.attach(stream);
    else this.waiting.push(stream);
  }

  private onCallEnd(end: CallStatus): void {
    if (end.code === status.OK) {
      this.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, `gateway ${this.opts.address} ended the link`));
      return;
    }
    const refused = end.code === status.UNAUTHENTICATED || end.code === status.PERMISSION_DENIED;
    this.close(
      new TunnelError(
        refused ? TunnelErrorCode.REFUSED : TunnelErrorCode.UNAVAILABLE,
        `gateway ${this.opts.address}: ${end.details || status[end.code]}`,
      ),
    );
  }

  private onFrame(f: Frame): void {
    if (this.mux) {
      this.mux.receive(f);
      return;
    }
    if (f.kind.case !== 'welcome') {
      this.close(
        new TunnelError(
          TunnelErrorCode.PROTOCOL,
          `gateway ${this.opts.address} did not start the link with Welcome`,
        ),
      );
      return;
    }
    const w = f.kind.value;
    const mux = new Multiplexer({
      sink: this.call.sink,
      idParity: 'odd',
      maxChunkSize: w.maxChunkSize,
      initialWindow: w.initialWindow,
      protocolVersion: w.protocolVersion,
      // One link carries streams to every agent of the gateway (watches stay open for hours):
      // the per-agent cap is the agent tunnel's, the gateway's answer to too many is a Reset.
      maxConcurrentStreams: LINK_MAX_CONCURRENT_STREAMS,
      ...(this.opts.windowBudget ? { windowBudget: this.opts.windowBudget } : {}),
    });
    mux.on('pong', () => {
      this.awaitingPong = false;
      this.pongs++;
    });
    this.mux = mux;
    this.awaitingPong = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (const s of waiting) {
      if (s.destroyed) continue;
      try {
        mux.attach(s);
      } catch (err) {
        s.destroy(err as Error);
      }
    }
  }

  /**
   * Asks the gateway for a Pong now; none within `timeoutMs` (or no Welcome yet) closes the link.
   * A request that heard nothing by its deadline calls this: a slow agent leaves the gateway
   * answering, a paused or partitioned gateway does not.
   */
  probe(timeoutMs: number): void {
    if (this.closedWith || this.probeTimer) return;
    const pongs = this.pongs;
    this.mux?.ping();
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      if (this.pongs === pongs)
        this.close(
          new TunnelError(
            TunnelErrorCode.UNAVAILABLE,
            `gateway ${this.opts.address} did not answer on the link within ${timeoutMs} ms of a request's deadline`,
          ),
        );
    }, timeoutMs);
    this.probeTimer.unref();
  }

  /** A retired link closes once nothing runs on it (checked at retirement and each heartbeat). */
  private closeIfRetiredAndIdle(): boolean {
    if (!this.retired || this.activeStreams > 0) return false;
    this.close(
      new TunnelError(TunnelErrorCode.CANCELLED, `link to gateway ${this.opts.address} retired by age`),
    );
    return true;
  }

  private heartbeat(): void {
    if (this.closeIfRetiredAndIdle()) return;
    if (this.awaitingPong) {
      this.close(
        new TunnelError(
          TunnelErrorCode.UNAVAILABLE,
          `gateway ${this.opts.address} stopped answering on the link`,
        ),
      );
      return;
    }
    this.awaitingPong = true;
    this.mux?.ping();
  }

  /**
   * Ends the link. Streams that heard nothing back are sent elsewhere (the gateway may be gone;
   * the agent may be elsewhere): see `LinkStream.linkLost`.
   */
  close(reason: TunnelError): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    clearInterval(this.pingTimer);
    clearTimeout(this.probeTimer);
    clearTimeout(this.retireTimer);
    const waiting = this.waiting;
    this.waiting = [];
    this.mux?.close(reason);
    for (const s of waiting) if (!s.destroyed) s.linkLost(reason, false);
    this.call.cancel();
    this.opts.onClosed(this, reason);
  }
}
