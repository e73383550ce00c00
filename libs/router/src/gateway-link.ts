import {
  type Client,
  type ClientDuplexStream,
  type Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { decodeFrame, encodeFrame, type Frame, GATEWAY_LINK_PATH } from '@pullplane/proto';
import { duplexFrameSink, Multiplexer, TunnelError, TunnelErrorCode } from '@pullplane/tunnel';
import type { LinkStream } from './link-stream.js';

/** Streams one link may carry at once; the gateway holds its side of a link to the same number. */
export const LINK_MAX_CONCURRENT_STREAMS = 65_536;

export interface GatewayLinkOptions {
  address: string;
  client: Client;
  metadata: Metadata;
  /** Heartbeat period; a link that leaves one unanswered until the next is closed. */
  pingIntervalMs: number;
  onClosed: (link: GatewayLink, reason: TunnelError) => void;
}

/**
 * One persistent GatewayForward.Link call to a gateway, carrying many logical streams through a
 * multiplexer like an agent's tunnel. Streams attached before the gateway's Welcome (which sets
 * the window and chunk size of the link) wait, detached, and leave together with it.
 */
export class GatewayLink {
  private readonly call: ClientDuplexStream<Frame, Frame>;
  private mux: Multiplexer | undefined;
  private waiting: LinkStream[] = [];
  private closedWith: TunnelError | undefined;
  private readonly pingTimer: NodeJS.Timeout;
  private awaitingPong = false;

  constructor(private readonly opts: GatewayLinkOptions) {
    const call = opts.client.makeBidiStreamRequest<Frame, Frame>(
      GATEWAY_LINK_PATH,
      encodeFrame,
      decodeFrame,
      opts.metadata,
    );
    this.call = call;
    call.on('data', (f: Frame) => this.onFrame(f));
    call.on('error', (err: ServiceError) => {
      const refused = err.code === status.UNAUTHENTICATED || err.code === status.PERMISSION_DENIED;
      this.close(
        new TunnelError(
          refused ? TunnelErrorCode.REFUSED : TunnelErrorCode.UNAVAILABLE,
          `gateway ${opts.address}: ${err.details || err.message}`,
        ),
      );
    });
    call.on('end', () =>
      this.close(new TunnelError(TunnelErrorCode.UNAVAILABLE, `gateway ${opts.address} ended the link`)),
    );
    this.pingTimer = setInterval(() => this.heartbeat(), opts.pingIntervalMs);
    this.pingTimer.unref();
  }

  get address(): string {
    return this.opts.address;
  }

  /** Takes new streams: not closed, not told to go away. */
  get usable(): boolean {
    return !this.closedWith && !this.mux?.isGoingAway;
  }

  get activeStreams(): number {
    return (this.mux?.activeStreams ?? 0) + this.waiting.length;
  }

  /** Sends a link stream's Open on this link (at once, or with the Welcome). Throws a TunnelError when it cannot. */
  attach(stream: LinkStream): void {
    if (this.closedWith) throw this.closedWith;
    if (this.mux) this.mux.attach(stream);
    else this.waiting.push(stream);
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
      sink: duplexFrameSink(this.call),
      idParity: 'odd',
      maxChunkSize: w.maxChunkSize,
      initialWindow: w.initialWindow,
      protocolVersion: w.protocolVersion,
      // One link carries streams to every agent of the gateway (watches stay open for hours):
      // the per-agent cap is the agent tunnel's, the gateway's answer to too many is a Reset.
      maxConcurrentStreams: LINK_MAX_CONCURRENT_STREAMS,
    });
    mux.on('pong', () => {
      this.awaitingPong = false;
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

  private heartbeat(): void {
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
    const waiting = this.waiting;
    this.waiting = [];
    this.mux?.close(reason);
    for (const s of waiting) if (!s.destroyed) s.linkLost(reason, false);
    this.call.cancel();
    this.opts.onClosed(this, reason);
  }
}
