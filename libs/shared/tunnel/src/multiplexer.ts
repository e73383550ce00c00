import { EventEmitter } from 'node:events';
import {
  type Frame,
  frame,
  type GoAway,
  type HeadLimits,
  headOverLimits,
  MAX_CHUNK_BYTES,
  MAX_RESET_MESSAGE_CHARS,
  type Open,
  type OpenMessageInit,
  openMessage,
  PROTOCOL_VERSION_MAX,
  ProtocolVersion,
  type Registration,
  resetFrame,
  streamIdOf,
} from '@pullplane/proto';
import { Deadline } from './deadline.js';
import {
  DEFAULT_INITIAL_WINDOW,
  DEFAULT_MAX_CHUNK_SIZE,
  DEFAULT_MAX_CONCURRENT_STREAMS,
  DEFAULT_MAX_STREAM_WINDOW,
  DEFAULT_SESSION_WINDOW_BUDGET,
  MAX_CHUNK_SIZE_LIMIT,
} from './defaults.js';
import { TunnelError, TunnelErrorCode } from './errors.js';
import type { FrameSink } from './frame-channel.js';
import { LogicalStream, type StreamHost } from './logical-stream.js';
import type { StreamEntry } from './stream-entry.js';
import { WindowBudget } from './window-budget.js';

export interface MultiplexerOptions {
  sink: FrameSink;
  /**
   * The parity of the stream ids this side opens; the peer opens the other, so both may open
   * without clashing. The side that sends requests takes `odd` (the gateway on an agent's
   * tunnel, the proxy on a link), the side that serves them `even`.
   */
  idParity: 'odd' | 'even';
  maxChunkSize?: number;
  initialWindow?: number;
  maxConcurrentStreams?: number;
  /** The protocol version agreed with the peer (v1 peers get no v2 fields). Default: newest. */
  protocolVersion?: number;
  /** Largest window a bulk stream may grow to; the initial window disables growth. */
  maxStreamWindow?: number;
  /**
   * Where window growth is reserved and buffered bytes counted: pass one budget to several
   * sessions to bound a whole process. Default: a budget of this session's own.
   */
  windowBudget?: WindowBudget;
  /** Called for each stream the peer opens. Without it (and `onOpen`), peer opens are refused. */
  onStream?: ((stream: LogicalStream) => void) | undefined;
  /**
   * Each Open the peer sends is handed here as it is, instead of becoming a LogicalStream: the
   * callee claims its id with `claimPeerId` or resets it (the gateway's side of a proxy link).
   */
  onOpen?: ((open: Open) => void) | undefined;
  /**
   * The peer is not trusted (the gateway's side of an agent tunnel): every frame it sends is
   * checked against these limits and the protocol before anything acts on it. A breach resets
   * the stream it concerns, never the tunnel, and is reported as a 'violation'.
   */
  peerLimits?: HeadLimits | undefined;
}

/** Ways an untrusted peer can break the protocol; each costs the stream it concerns. */
export type ViolationKind =
  | 'oversized-frame'
  | 'flow-control'
  | 'after-end'
  | 'unknown-stream'
  | 'unexpected-frame';

export interface PeerViolation {
  kind: ViolationKind;
  /** The stream it concerns, when any. */
  streamId?: number | undefined;
  message: string;
}

export interface MultiplexerEvents {
  goaway: [GoAway];
  /** The gateway says whether the agent's cluster is registered (agents that announce it). */
  registration: [Registration];
  pong: [rttMs: number];
  ping: [];
  closed: [TunnelError];
  'protocol-error': [string];
  violation: [PeerViolation];
}

const EMPTY = new Uint8Array(0);

/**
 * One end of a tunnel: runs many logical streams over one ordered frame transport. It never
 * blocks reading: each stream's credit window bounds what may be queued for it, so the
 * transport can be drained continuously and one slow stream cannot stall the others.
 *
 * Its stream table maps each id to a StreamEntry: a LogicalStream of its own, or an entry
 * another package claimed the id for (`claim`, `claimPeerId`). A frame costs one lookup in it.
 */
export class Multiplexer extends EventEmitter<MultiplexerEvents> {
  maxChunkSize: number;
  initialWindow: number;
  protocolVersion: number;
  readonly windowBudget: WindowBudget;
  private readonly maxConcurrentStreams: number;
  private readonly entries = new Map<number, StreamEntry>();
  /** The first id this side opens: 1 (odd ids) or 2 (even ids). */
  private readonly firstId: number;
  private nextId: number;
  /** Ids of ours above this (while ids have not wrapped) were never opened. */
  private lastIssued = 0;
  private idsWrapped = false;
  private closedWith: TunnelError | undefined;
  private goingAway = false;
  private readonly host: StreamHost;
  // Responder deadlines share one timer, armed for the earliest.
  private readonly deadlines = new Set<LogicalStream>();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineTimerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly opts: MultiplexerOptions) {
    super();
    this.maxChunkSize = Math.min(opts.maxChunkSize ?? DEFAULT_MAX_CHUNK_SIZE, MAX_CHUNK_SIZE_LIMIT);
    this.initialWindow = Math.max(opts.initialWindow ?? DEFAULT_INITIAL_WINDOW, this.maxChunkSize);
    this.protocolVersion = opts.protocolVersion ?? PROTOCOL_VERSION_MAX;
    this.maxConcurrentStreams = opts.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS;
    this.windowBudget = opts.windowBudget ?? new WindowBudget(DEFAULT_SESSION_WINDOW_BUDGET);
    this.firstId = opts.idParity === 'odd' ? 1 : 2;
    this.nextId = this.firstId;
    const mux = this;
    this.host = {
      sendFrame: (f) => this.send(f),
      drained: () => this.opts.sink.drained(),
      release: (s) => {
        if (this.entries.get(s.id) === s) this.entries.delete(s.id);
        this.clearDeadline(s);
      },
      clearDeadline: (s) => this.clearDeadline(s),
      violation: (s, kind, message) => this.reportViolation({ kind, streamId: s.id, message }),
      get maxChunkSize() {
        return mux.maxChunkSize;
      },
      get writes() {
        return mux.opts.sink.writes;
      },
      get foldFrames() {
        return mux.protocolVersion >= ProtocolVersion.PROTOCOL_VERSION_2;
      },
      budget: this.windowBudget,
      get maxWindow() {
        return Math.max(mux.initialWindow, opts.maxStreamWindow ?? DEFAULT_MAX_STREAM_WINDOW);
      },
      maxChunkLimit: MAX_CHUNK_SIZE_LIMIT,
    };
    opts.sink.onOversize = (f, bytes) => this.oversize(f, bytes);
  }

  /**
   * Takes the peer's tunnel settings (the gateway announces them in Welcome) so both sides
   * account credit with the same window and speak the same version. Only before the first stream.
   */
  adopt(settings: { maxChunkSize: number; initialWindow: number; protocolVersion?: number }): void {
    if (this.entries.size > 0) throw new Error('tunnel settings can only change before the first stream');
    if (settings.maxChunkSize > 0) this.maxChunkSize = Math.min(settings.maxChunkSize, MAX_CHUNK_SIZE_LIMIT);
    if (settings.initialWindow > 0) this.initialWindow = Math.max(settings.initialWindow, this.maxChunkSize);
    if (settings.protocolVersion && settings.protocolVersion > 0)
      this.protocolVersion = settings.protocolVersion;
  }

  get activeStreams(): number {
    return this.entries.size;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  get isGoingAway(): boolean {
    return this.goingAway;
  }

  /**
   * Sends `f`. `onWritten`, when given, runs once the transport has written it, or has failed
   * holding it (or at once, when nothing will hold it): lets a relay count the bytes it holds in
   * transport queues until they are gone.
   */
  send(f: Frame, onWritten?: () => void): boolean {
    const sink = this.opts.sink;
    if (!onWritten) return this.closedWith ? true : sink.send(f);
    if (this.closedWith || !sink.afterWrite) {
      // Nothing will hold it: count it written now, or the bytes would stay counted for ever.
      if (!this.closedWith) sink.send(f);
      onWritten();
      return true;
    }
    sink.afterWrite(onWritten);
    return sink.send(f);
  }

  private checkCanOpen(): void {
    if (this.closedWith) throw this.closedWith;
    if (this.goingAway) throw new TunnelError(TunnelErrorCode.GOING_AWAY, 'tunnel is going away');
    if (this.entries.size >= this.maxConcurrentStreams) {
      throw new TunnelError(
        TunnelErrorCode.REFUSED,
        `too many concurrent streams on this tunnel (${this.maxConcurrentStreams})`,
      );
    }
  }

  /**
   * Opens a stream towards the peer. The Open frame is sent at once (in this turn's write): a
   * body written in the same turn rides inline, and ending the stream then makes it one frame.
   */
  /** Everything in the Open but the stream id, which the multiplexer picks. */
  open(init: OpenMessageInit): LogicalStream {
    this.checkCanOpen();
    const id = this.allocateId();
    const open = openMessage(init, id);
    // An inline body the peer cannot take (v1, or more than one chunk of credit) follows as Data.
    let follows: Uint8Array | undefined;
    let endsAfter = false;
    if (
      open.body.byteLength > 0 &&
      (!this.host.foldFrames || open.body.byteLength > Math.min(this.initialWindow, this.maxChunkSize))
    ) {
      follows = open.body;
      endsAfter = !open.hasBody;
      open.body = EMPTY;
      open.hasBody = true;
    }
    const stream = new LogicalStream(this.host, id, open, {
      initialWindow: this.initialWindow,
      highWaterMark: this.maxChunkSize,
      initiator: true,
    });
    this.entries.set(id, stream);
    const writesBefore = this.opts.sink.writes;
    const f = frame({ case: 'open', value: open });
    this.send(f);
    stream.openSent(f, writesBefore, open.body.byteLength);
    if (follows) {
      stream.write(follows);
      if (endsAfter) stream.end();
    } else if (!open.hasBody) stream.end();
    return stream;
  }

  /**
   * Sends the Open of a stream built on no multiplexer (or detached from one) under a new id of
   * ours, as `open` would have; a body that follows the Open waits for the peer's Accepted.
   * Throws like `open`.
   */
  attach(stream: LogicalStream): void {
    this.checkCanOpen();
    const id = this.allocateId();
    this.entries.set(id, stream);
    const writesBefore = this.opts.sink.writes;
    const f = stream.attach(this.host, id, this.initialWindow);
    this.send(f);
    stream.openSent(f, writesBefore, stream.open.body.byteLength);
    stream.resumeHeld();
  }

  /**
   * Takes a new id of ours for `entry`, whose owner sends the Open itself (with `send`); frames
   * of that id then go to `entry`. Throws like `open`.
   */
  claim(entry: StreamEntry): number {
    this.checkCanOpen();
    const id = this.allocateId();
    this.entries.set(id, entry);
    return id;
  }

  /** Takes the peer's stream `id`, announced through `onOpen`: its frames go to `entry`. */
  claimPeerId(id: number, entry: StreamEntry): void {
    this.entries.set(id, entry);
  }

  /** `entry` is done with `id`: later frames of it are dropped. */
  release(id: number, entry: StreamEntry): void {
    if (this.entries.get(id) === entry) this.entries.delete(id);
  }

  private allocateId(): number {
    // Ids wrap after 2^32; skip any still in use. Parity keeps the two sides apart.
    for (;;) {
      const id = this.nextId;
      this.nextId = (this.nextId + 2) % 0x1_0000_0000;
      if (this.nextId === 0 || this.nextId === 1) {
        this.nextId = this.firstId;
        this.idsWrapped = true;
      }
      if (!this.entries.has(id)) {
        if (id > this.lastIssued) this.lastIssued = id;
        return id;
      }
    }
  }

  private isOurs(id: number): boolean {
    return id % 2 === this.firstId % 2;
  }

  /**
   * An untrusted peer broke the protocol: the caller has reset what it concerns; this tells
   * whoever counts (the gateway's session, which closes a tunnel that keeps doing it).
   */
  reportViolation(v: PeerViolation): void {
    this.emit('violation', v);
  }

  /**
   * Checks a frame from an untrusted peer before anything acts on it; a frame that breaks the
   * limits or concerns no stream we ever opened costs its stream and is reported. Returns
   * whether the frame may be processed.
   */
  private admit(f: Frame, limits: HeadLimits): boolean {
    const k = f.kind;
    let breach: string | undefined;
    switch (k.case) {
      case 'responseHead':
        breach =
          headOverLimits(k.value.headers, limits) ??
          (k.value.body.byteLength > MAX_CHUNK_BYTES
            ? `an inline body of ${k.value.body.byteLength} bytes (the limit is ${MAX_CHUNK_BYTES})`
            : undefined);
        break;
      case 'data':
        if (k.value.chunk.byteLength > MAX_CHUNK_BYTES)
          breach = `a chunk of ${k.value.chunk.byteLength} bytes (the limit is ${MAX_CHUNK_BYTES})`;
        break;
      case 'reset':
        // A reason is for logs and Status messages: a long one is cut, not relayed whole.
        if (k.value.message.length > MAX_RESET_MESSAGE_CHARS)
          k.value.message = k.value.message.slice(0, MAX_RESET_MESSAGE_CHARS);
        return true;
      case 'end':
      case 'windowUpdate':
        break;
      default:
        return true;
    }
    const id = k.value.streamId;
    if (breach !== undefined) {
      this.violated(id, 'oversized-frame', `the agent sent ${k.case} with ${breach}`);
      return false;
    }
    if (!this.entries.has(id) && this.isOurs(id) && !this.idsWrapped && id > this.lastIssued) {
      this.reportViolation({
        kind: 'unknown-stream',
        streamId: id,
        message: `the agent sent ${k.case} for stream ${id}, which was never opened`,
      });
      return false;
    }
    return true;
  }

  /** Resets stream `id` (on every side it spans) for a breach of the peer limits, and reports it. */
  private violated(id: number, kind: ViolationKind, message: string): void {
    this.entries.get(id)?.abort(new TunnelError(TunnelErrorCode.PROTOCOL, message), 'violation');
    this.reportViolation({ kind, streamId: id, message });
  }

  /** A frame of ours that no message could carry went out as a Reset: fail the stream here too. */
  private oversize(f: Frame, bytes: number): void {
    const id = streamIdOf(f);
    if (id === undefined) {
      this.emit('protocol-error', `dropped a ${f.kind.case} frame of ${bytes} bytes: over the message limit`);
      return;
    }
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    entry.abort(
      new TunnelError(
        TunnelErrorCode.INTERNAL,
        `a ${f.kind.case} frame of ${bytes} bytes exceeds the tunnel's message limit`,
      ),
      'oversize',
    );
  }

  /** Feeds one frame read from the transport. */
  receive(f: Frame): void {
    if (this.closedWith) return;
    const limits = this.opts.peerLimits;
    if (limits && f.kind.case !== 'batch' && !this.admit(f, limits)) return;
    const k = f.kind;
    switch (k.case) {
      case 'responseHead':
      case 'data':
      case 'end':
      case 'windowUpdate':
      case 'reset':
      case 'accepted':
        this.entries.get(k.value.streamId)?.receive(f);
        return;
      case 'batch':
        for (const inner of k.value.frames) {
          if (inner.kind.case === 'batch') this.emit('protocol-error', 'nested batch');
          else this.receive(inner);
        }
        return;
      case 'open':
        this.onOpen(f, k.value);
        return;
      case 'ping':
        this.send(frame({ case: 'pong', value: { sentUnixMs: k.value.sentUnixMs } }));
        this.emit('ping');
        return;
      case 'pong':
        this.emit('pong', Math.max(0, Date.now() - Number(k.value.sentUnixMs)));
        return;
      case 'goAway':
        this.goingAway = true;
        this.emit('goaway', k.value);
        return;
      case 'registration':
        this.emit('registration', k.value);
        return;
      default:
        // hello/welcome belong to the handshake, before the multiplexer exists.
        this.emit('protocol-error', `unexpected ${k.case ?? 'empty'} frame on an established tunnel`);
    }
  }

  private onOpen(f: Frame, open: Open): void {
    const id = open.streamId;
    const refuse = (code: TunnelErrorCode, message: string) =>
      this.send(resetFrame(id, new TunnelError(code, message).resetCode, message));
    if (this.isOurs(id)) {
      refuse(TunnelErrorCode.PROTOCOL, `stream id ${id} is not valid for the peer to open`);
      return;
    }
    // An id in use: whoever holds it deals with the peer's mistake.
    const entry = this.entries.get(id);
    if (entry) {
      entry.receive(f);
      return;
    }
    if ((!this.opts.onStream && !this.opts.onOpen) || this.goingAway) {
      refuse(TunnelErrorCode.REFUSED, 'this side does not accept new streams');
      if (this.opts.peerLimits && !this.goingAway)
        this.reportViolation({
          kind: 'unexpected-frame',
          streamId: id,
          message: 'the agent opened a stream',
        });
      return;
    }
    if (this.entries.size >= this.maxConcurrentStreams) {
      refuse(TunnelErrorCode.REFUSED, `too many concurrent streams (${this.maxConcurrentStreams})`);
      return;
    }
    if (this.opts.onOpen) {
      this.opts.onOpen(open);
      return;
    }
    const onStream = this.opts.onStream;
    if (!onStream) return;
    const stream = new LogicalStream(this.host, id, open, {
      initialWindow: this.initialWindow,
      highWaterMark: this.maxChunkSize,
      initiator: false,
    });
    this.entries.set(id, stream);
    stream.acceptOpen();
    // An inline body over the credit reset the stream already: no work for it.
    if (stream.destroyed) return;
    // What was left of the requester's deadline when it sent the Open.
    const deadline = Deadline.after(open.timeoutMs);
    if (deadline.isSet) this.armDeadline(stream, deadline.at);
    onStream(stream);
  }

  // ---- responder deadlines ----

  private armDeadline(stream: LogicalStream, at: number): void {
    stream.deadlineAt = at;
    this.deadlines.add(stream);
    if (at < this.deadlineTimerAt) this.scheduleDeadlines(at);
  }

  private clearDeadline(stream: LogicalStream): void {
    // The timer stays armed; when it fires it finds nothing due and re-arms for the next.
    if (stream.deadlineAt !== 0) this.deadlines.delete(stream);
    stream.deadlineAt = 0;
  }

  private scheduleDeadlines(at: number): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimerAt = at;
    this.deadlineTimer = setTimeout(() => this.expireDeadlines(), Math.max(0, at - Date.now()));
    this.deadlineTimer.unref();
  }

  /**
   * Streams that have not answered by their requester's timeout are reset with
   * DEADLINE_EXCEEDED: the peer learns why, and the handler sees its stream fail and stops.
   */
  private expireDeadlines(): void {
    this.deadlineTimer = undefined;
    this.deadlineTimerAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const s of [...this.deadlines]) {
      if (s.deadlineAt <= now) {
        this.clearDeadline(s);
        s.reset(
          TunnelErrorCode.DEADLINE_EXCEEDED,
          `no response within the requester's timeout of ${s.open.timeoutMs} ms`,
        );
      } else if (s.deadlineAt < next) next = s.deadlineAt;
    }
    if (next !== Number.POSITIVE_INFINITY) this.scheduleDeadlines(next);
  }

  /** Sends a heartbeat; the peer's Pong echoes the time, and 'pong' reports the round trip. */
  ping(): void {
    this.send(frame({ case: 'ping', value: { sentUnixMs: BigInt(Date.now()) } }));
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
    clearTimeout(this.deadlineTimer);
    this.deadlines.clear();
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const e of entries) e.abort(err, 'closed');
    this.emit('closed', err);
  }
}
