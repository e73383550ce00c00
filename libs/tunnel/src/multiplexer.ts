import { EventEmitter } from 'node:events';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Frame, frame, type GoAway, type Open, OpenSchema } from '@pullplane/proto';
import { TunnelError, TunnelErrorCode } from './errors.js';
import type { FrameSink } from './frame-channel.js';
import { LogicalStream } from './logical-stream.js';

export const DEFAULT_MAX_CHUNK_SIZE = 64 * 1024;
export const MAX_CHUNK_SIZE_LIMIT = 1024 * 1024;
export const DEFAULT_INITIAL_WINDOW = 256 * 1024;
export const DEFAULT_MAX_CONCURRENT_STREAMS = 2048;

export interface MultiplexerOptions {
  sink: FrameSink;
  /** Gateways open odd stream ids, agents even ones, so both may open without clashing. */
  role: 'gateway' | 'agent';
  maxChunkSize?: number;
  initialWindow?: number;
  maxConcurrentStreams?: number;
  /** Called for each stream the peer opens. Without it, peer opens are refused. */
  onStream?: (stream: LogicalStream) => void;
}

/** What an opener supplies: everything in Open but the stream id, which the multiplexer picks. */
export type OpenInit = Omit<Exclude<MessageInitShape<typeof OpenSchema>, Open>, 'streamId' | '$typeName'>;

export interface MultiplexerEvents {
  goaway: [GoAway];
  pong: [rttMs: number];
  ping: [];
  closed: [TunnelError];
  'protocol-error': [string];
}

/**
 * Runs many logical streams over one ordered frame transport. It never blocks reading:
 * each stream's credit window bounds what may be queued for it, so the transport can be
 * drained continuously and one slow stream cannot stall the others.
 */
export class Multiplexer extends EventEmitter<MultiplexerEvents> {
  maxChunkSize: number;
  initialWindow: number;
  private readonly maxConcurrentStreams: number;
  private readonly streams = new Map<number, LogicalStream>();
  private nextId: number;
  private closedWith: TunnelError | undefined;
  private goingAway = false;
  private readonly host: {
    sendFrame(f: Frame): boolean;
    drained(): Promise<void>;
    release(s: LogicalStream): void;
    maxChunkSize: number;
  };

  constructor(private readonly opts: MultiplexerOptions) {
    super();
    this.maxChunkSize = Math.min(opts.maxChunkSize ?? DEFAULT_MAX_CHUNK_SIZE, MAX_CHUNK_SIZE_LIMIT);
    this.initialWindow = Math.max(opts.initialWindow ?? DEFAULT_INITIAL_WINDOW, this.maxChunkSize);
    this.maxConcurrentStreams = opts.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS;
    this.nextId = opts.role === 'gateway' ? 1 : 2;
    this.host = {
      sendFrame: (f: Frame) => this.send(f),
      drained: () => this.opts.sink.drained(),
      release: (s: LogicalStream) => {
        if (this.streams.get(s.id) === s) this.streams.delete(s.id);
      },
      maxChunkSize: this.maxChunkSize,
    };
  }

  /**
   * Takes the peer's tunnel settings (the gateway announces them in Welcome) so both sides
   * account credit with the same window. Only before the first stream.
   */
  adopt(settings: { maxChunkSize: number; initialWindow: number }): void {
    if (this.streams.size > 0) throw new Error('tunnel settings can only change before the first stream');
    if (settings.maxChunkSize > 0) this.maxChunkSize = Math.min(settings.maxChunkSize, MAX_CHUNK_SIZE_LIMIT);
    if (settings.initialWindow > 0) this.initialWindow = Math.max(settings.initialWindow, this.maxChunkSize);
    this.host.maxChunkSize = this.maxChunkSize;
  }

  get activeStreams(): number {
    return this.streams.size;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  get isGoingAway(): boolean {
    return this.goingAway;
  }

  send(f: Frame): boolean {
    if (this.closedWith) return true;
    return this.opts.sink.send(f);
  }

  /** Opens a stream towards the peer. The Open frame is sent at once. */
  open(init: OpenInit): LogicalStream {
    if (this.closedWith) throw this.closedWith;
    if (this.goingAway) throw new TunnelError(TunnelErrorCode.GOING_AWAY, 'tunnel is going away');
    if (this.streams.size >= this.maxConcurrentStreams) {
      throw new TunnelError(
        TunnelErrorCode.REFUSED,
        `too many concurrent streams on this tunnel (${this.maxConcurrentStreams})`,
      );
    }
    const id = this.allocateId();
    const open = create(OpenSchema, { ...init, streamId: id });
    const stream = new LogicalStream(this.host, id, open, {
      initialWindow: this.initialWindow,
      highWaterMark: this.maxChunkSize,
      initiator: true,
    });
    this.streams.set(id, stream);
    this.send(frame({ case: 'open', value: open }));
    if (!open.hasBody) stream.end();
    return stream;
  }

  private allocateId(): number {
    // Ids wrap after 2^32; skip any still in use. Parity keeps the two sides apart.
    for (;;) {
      const id = this.nextId;
      this.nextId = (this.nextId + 2) % 0x1_0000_0000;
      if (this.nextId === 0) this.nextId = this.opts.role === 'gateway' ? 1 : 2;
      if (!this.streams.has(id)) return id;
    }
  }

  /** Feeds one frame read from the transport. */
  receive(f: Frame): void {
    if (this.closedWith) return;
    if (f.kind.case === 'batch') {
      for (const inner of f.kind.value.frames) {
        if (inner.kind.case === 'batch') this.emit('protocol-error', 'nested batch');
        else this.receive(inner);
      }
      return;
    }
    const k = f.kind;
    switch (k.case) {
      case 'open':
        this.onOpen(k.value);
        return;
      case 'responseHead':
        this.streams.get(k.value.streamId)?.onResponseHead(k.value);
        return;
      case 'data':
        this.streams.get(k.value.streamId)?.onData(k.value.chunk);
        return;
      case 'end':
        this.streams.get(k.value.streamId)?.onRemoteEnd();
        return;
      case 'windowUpdate':
        this.streams.get(k.value.streamId)?.onWindowUpdate(k.value.increment);
        return;
      case 'reset':
        this.streams.get(k.value.streamId)?.onReset(TunnelError.fromReset(k.value.code, k.value.message));
        return;
      case 'ping':
        this.send(frame({ case: 'pong', value: { nonce: k.value.nonce, sentUnixMs: k.value.sentUnixMs } }));
        this.emit('ping');
        return;
      case 'pong':
        this.emit('pong', Math.max(0, Date.now() - Number(k.value.sentUnixMs)));
        return;
      case 'goAway':
        this.goingAway = true;
        this.emit('goaway', k.value);
        return;
      default:
        // hello/welcome belong to the handshake, before the multiplexer exists.
        this.emit('protocol-error', `unexpected ${k.case ?? 'empty'} frame on an established tunnel`);
    }
  }

  private onOpen(open: Open): void {
    const id = open.streamId;
    const ours = this.opts.role === 'gateway' ? id % 2 === 1 : id % 2 === 0;
    const refuse = (code: TunnelErrorCode, message: string) =>
      this.send(
        frame({
          case: 'reset',
          value: { streamId: id, code: new TunnelError(code, message).resetCode, message },
        }),
      );
    if (ours || this.streams.has(id)) {
      refuse(TunnelErrorCode.PROTOCOL, `stream id ${id} is not valid for the peer to open`);
      return;
    }
    if (!this.opts.onStream || this.goingAway) {
      refuse(TunnelErrorCode.REFUSED, 'this side does not accept new streams');
      return;
    }
    if (this.streams.size >= this.maxConcurrentStreams) {
      refuse(TunnelErrorCode.REFUSED, `too many concurrent streams (${this.maxConcurrentStreams})`);
      return;
    }
    const stream = new LogicalStream(this.host, id, open, {
      initialWindow: this.initialWindow,
      highWaterMark: this.maxChunkSize,
      initiator: false,
    });
    this.streams.set(id, stream);
    this.opts.onStream(stream);
  }

  ping(): void {
    this.send(frame({ case: 'ping', value: { nonce: 0n, sentUnixMs: BigInt(Date.now()) } }));
  }

  /** Tells the peer to open nothing new here; in-flight streams continue. */
  goAway(reason: string, drainMs: number): void {
    this.goingAway = true;
    this.send(frame({ case: 'goAway', value: { reason, drainMs } }));
  }

  /** Ends every stream with `err` (the transport is gone). Idempotent. */
  close(err: TunnelError = new TunnelError(TunnelErrorCode.UNAVAILABLE, 'tunnel closed')): void {
    if (this.closedWith) return;
    this.closedWith = err;
    for (const s of [...this.streams.values()]) s.onTransportClosed(err);
    this.streams.clear();
    this.emit('closed', err);
  }
}
