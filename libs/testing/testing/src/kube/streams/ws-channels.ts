import { Readable, Writable } from 'node:stream';
import type { WebSocket } from 'ws';

/** The v5 client's "this channel is done" signal: [255, channel]. */
const STREAM_CLOSE = 255;
/** Bytes queued to the socket before channel writers are told to wait. */
const MAX_IN_FLIGHT = 1024 * 1024;

export interface ChannelConnectionOptions {
  /** `*.base64.channel.k8s.io`: text messages, channel as an ASCII digit, payload base64. */
  base64: boolean;
  /** v5.channel.k8s.io: the client may close one channel with [255, channel]. */
  streamClose: boolean;
  channelCount: number;
  /** Channels whose incoming data is kept; data for the others is dropped, as wsstream does. */
  readableChannels: readonly number[];
}

/**
 * The channel protocol of Kubernetes' wsstream over one WebSocket: every message starts with the
 * number of the channel it belongs to. Incoming data is back-pressured (a full channel pauses the
 * socket); outgoing writes wait while more than 1 MiB is queued to the socket.
 */
export class ChannelConnection {
  private readonly inputs = new Map<number, ChannelInput>();
  private readonly blocked = new Set<number>();
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private closedFlag = false;
  readonly closed: Promise<void>;

  constructor(
    private readonly ws: WebSocket,
    private readonly opts: ChannelConnectionOptions,
  ) {
    for (const ch of opts.readableChannels) this.inputs.set(ch, new ChannelInput(this, ch));
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    this.closed = new Promise((resolve) => {
      ws.once('close', () => {
        this.closedFlag = true;
        for (const input of this.inputs.values()) input.finish();
        for (const w of this.waiting.splice(0)) w();
        resolve();
      });
    });
    ws.on('error', () => {
      // A broken socket surfaces as 'close' right after; nothing else to do.
    });
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  /** Incoming data of a readable channel (ends when the client closes it or the socket closes). */
  input(channel: number): Readable {
    const input = this.inputs.get(channel);
    if (!input) throw new Error(`channel ${channel} is not readable`);
    return input;
  }

  /** A writer for one channel; each write becomes one message. */
  output(channel: number): Writable {
    const out = new Writable({
      write: (chunk: Buffer, _enc, cb) => this.send(channel, chunk, cb),
    });
    // Writing after the socket closed fails; writers see 'close', and nothing may crash the server.
    out.on('error', () => {});
    return out;
  }

  /** Sends one message on a channel (an empty payload is the "stream ready" signal). */
  send(channel: number, data: Buffer, cb: (err?: Error | null) => void = () => {}): void {
    if (this.closedFlag) {
      cb(new Error('WebSocket closed'));
      return;
    }
    const message = this.opts.base64
      ? `${String.fromCharCode(48 + channel)}${data.toString('base64')}`
      : Buffer.concat([Buffer.from([channel]), data]);
    const size = message.length;
    this.inFlight += size;
    this.ws.send(message, { binary: !this.opts.base64 }, () => {
      this.inFlight -= size;
      if (this.inFlight <= MAX_IN_FLIGHT) for (const w of this.waiting.splice(0)) w();
    });
    if (this.inFlight <= MAX_IN_FLIGHT) cb();
    else this.waiting.push(() => cb(this.closedFlag ? new Error('WebSocket closed') : null));
  }

  /** Normal closure (1000), as the API server ends a finished session. */
  close(): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(1000);
  }

  terminate(): void {
    this.ws.terminate();
  }

  block(channel: number): void {
    if (this.blocked.has(channel)) return;
    this.blocked.add(channel);
    this.ws.pause();
  }

  unblock(channel: number): void {
    if (this.blocked.delete(channel) && this.blocked.size === 0 && !this.closedFlag) this.ws.resume();
  }

  private onMessage(raw: Buffer, isBinary: boolean): void {
    if (raw.length === 0) return;
    if (this.opts.streamClose && isBinary && raw[0] === STREAM_CLOSE) {
      // wsstream ends the whole connection on a malformed close signal.
      if (raw.length !== 2 || raw[1]! >= this.opts.channelCount) {
        this.ws.close(1002, 'malformed stream close signal');
        return;
      }
      this.inputs.get(raw[1]!)?.finish();
      return;
    }
    let channel: number;
    let payload: Buffer;
    if (this.opts.base64) {
      channel = raw[0]! - 48;
      payload = Buffer.from(raw.subarray(1).toString('latin1'), 'base64');
    } else {
      channel = raw[0]!;
      payload = raw.subarray(1);
    }
    this.inputs.get(channel)?.deliver(payload);
  }
}

class ChannelInput extends Readable {
  private ended = false;

  constructor(
    private readonly conn: ChannelConnection,
    private readonly channel: number,
  ) {
    super();
  }

  deliver(data: Buffer): void {
    if (this.ended || data.length === 0) return;
    if (!this.push(data)) this.conn.block(this.channel);
  }

  finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.push(null);
    this.conn.unblock(this.channel);
  }

  override _read(): void {
    this.conn.unblock(this.channel);
  }
}
