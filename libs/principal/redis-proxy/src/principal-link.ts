import type { Socket } from 'node:net';
import { connectRedis, type RedisEndpoint, readyEvent, setupCommands } from '@pullplane/redis-common';
import { encodeCommand, errorReply, type RespValue, ValueSlicer } from '@pullplane/resp';
import type { Logger } from 'pino';
import { ReplyText } from './errors.js';
import type { ReplyQueue, Slot } from './reply-queue.js';

/** A client connection as the principal link sees it. */
export interface LinkOwner {
  readonly queue: ReplyQueue;
  /** Replies were put into the owner's queue: drain and write them (once per chunk read). */
  flushReplies(): void;
  /** One of the owner's expectations was answered (however: reply, replacement, failure). */
  answered(): void;
}

/** What to do with each upcoming reply of the principal Redis, in order. */
export type Expectation =
  /** `count` replies go, byte for byte, into the owner's reply slot. */
  | { kind: 'slot'; owner: LinkOwner; slot: Slot; count: number; observe?: (value: RespValue) => void }
  /** The proxy's own command (AUTH, HELLO, CLIENT SETNAME replay): the reply is dropped. */
  | { kind: 'discard'; what: string }
  /** Part of a split command: the decoded reply is handed back. */
  | { kind: 'capture'; owner: LinkOwner; resolve: (value: RespValue) => void }
  /** The reply is replaced (EXEC of a poisoned transaction answers EXECABORT). */
  | { kind: 'replace'; owner: LinkOwner; slot: Slot; bytes: Buffer };

export interface PrincipalLinkOptions {
  endpoint: RedisEndpoint;
  logger: Logger;
  maxBulkLength: number;
  /**
   * Shared by many client connections: writes are gathered and sent once per event-loop
   * turn, so fifty clients sending one command each cost one write, not fifty.
   */
  shared: boolean;
  /** The connection is gone; every expectation has been answered with an error. */
  onClosed: (reason: string) => void;
}

export interface ClientState {
  protocol: 2 | 3;
  db: number;
  name: Buffer | undefined;
}

/** Writes above this are held back (the writer is told to pause until drained). */
const HIGH_WATER = 1024 * 1024;

/**
 * A connection to the principal Redis. Commands are written as received; replies are cut at
 * value boundaries (the decoder reports where each ended) and handed to whoever is owed them,
 * as the same bytes. One link serves either one client connection (its own state: SELECT,
 * MULTI, WATCH, blocking commands) or many stateless ones (shared).
 */
export class PrincipalLink {
  private readonly socket: Socket;
  private readonly fifo: Expectation[] = [];
  private fifoHead = 0;
  private readonly slicer: ValueSlicer;
  private closed = false;
  private corked = false;
  private closeReason = 'connection closed';
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private batchScheduled = false;
  private drainWaiters: Array<() => void> = [];
  private readonly touched = new Set<LinkOwner>();

  constructor(
    private readonly opts: PrincipalLinkOptions,
    state: ClientState,
  ) {
    this.slicer = new ValueSlicer({
      maxBulkLength: opts.maxBulkLength,
      onValue: (v, raw) => this.onReply(v, raw),
      onError: (err) => this.destroy(`malformed reply: ${err.message}`),
    });
    const socket = connectRedis(opts.endpoint, (chunk) => {
      this.slicer.push(chunk);
      this.notifyOwners();
    });
    this.socket = socket;
    socket.on('drain', () => this.wakeWriters());
    socket.on('error', (err) => {
      this.closeReason = err.message;
    });
    socket.on('close', () => this.fail());
    socket.once(readyEvent(opts.endpoint), () => socket.setTimeout(0));
    socket.setTimeout(10_000, () => socket.destroy(new Error('connect timeout')));
    // The replay goes first: every forwarded command then runs in the client's state.
    for (const { command, what } of setupCommands(opts.endpoint, state))
      this.send(command, { kind: 'discard', what });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Sends a command of the proxy's own whose reply is dropped. */
  internal(args: ReadonlyArray<string | Buffer>, what: string): void {
    this.send(encodeCommand(args), { kind: 'discard', what });
  }

  /** Writes one command; returns false when the writer should pause until `whenDrained`. */
  send(command: Buffer | Buffer[], expectation: Expectation): boolean {
    if (this.closed) {
      this.answer(expectation, ReplyText.principalUnavailable(this.closeReason));
      if (expectation.kind !== 'discard') expectation.owner.flushReplies();
      return true;
    }
    this.fifo.push(expectation);
    return this.write(command);
  }

  /** Whether the last expectation is the run slot `slot`, which may then take more replies. */
  tailIs(slot: Slot): boolean {
    if (this.closed || this.fifo.length === this.fifoHead) return false;
    const tail = this.fifo[this.fifo.length - 1]!;
    return tail.kind === 'slot' && tail.slot === slot && tail.observe === undefined;
  }

  /** Writes one more command whose reply joins the tail run (after tailIs said yes). */
  sendMore(command: Buffer | Buffer[]): boolean {
    (this.fifo[this.fifo.length - 1] as { count: number }).count++;
    return this.write(command);
  }

  /** Calls `wake` once the link takes writes again (or is gone). */
  whenDrained(wake: () => void): void {
    if (this.closed) wake();
    else this.drainWaiters.push(wake);
  }

  cork(): void {
    if (this.corked || this.closed || this.opts.shared) return;
    this.corked = true;
    this.socket.cork();
  }

  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  }

  /** Stops reading replies (the client does not read its own); dedicated links only. */
  pause(): void {
    if (!this.opts.shared) this.socket.pause();
  }

  resume(): void {
    if (!this.opts.shared) this.socket.resume();
  }

  /** Closes the connection; whatever is still owed is answered with an error. */
  destroy(reason = 'client went away'): void {
    this.closeReason = reason;
    this.socket.destroy();
    this.fail();
  }

  private write(command: Buffer | Buffer[]): boolean {
    if (this.opts.shared) {
      if (Array.isArray(command)) for (const part of command) this.gather(part);
      else this.gather(command);
      if (!this.batchScheduled) {
        this.batchScheduled = true;
        setImmediate(() => this.flushBatch());
      }
      return this.batchBytes + this.socket.writableLength < HIGH_WATER;
    }
    if (!Array.isArray(command)) return this.socket.write(command);
    let ok = true;
    for (const part of command) ok = this.socket.write(part);
    return ok;
  }

  private gather(part: Buffer): void {
    this.batch.push(part);
    this.batchBytes += part.length;
  }

  private flushBatch(): void {
    this.batchScheduled = false;
    if (this.closed || this.batch.length === 0) return;
    const batch = this.batch;
    const bytes = this.batchBytes;
    this.batch = [];
    this.batchBytes = 0;
    this.socket.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch, bytes));
  }

  private wakeWriters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }

  private notifyOwners(): void {
    if (this.touched.size === 0) return;
    const owners = [...this.touched];
    this.touched.clear();
    for (const owner of owners) owner.flushReplies();
  }

  private onReply(v: RespValue, raw: Buffer | Buffer[]): void {
    // RESP3 out-of-band data answers no command (nothing here turns tracking on).
    if (v.type === 'push') return;
    const e = this.fifo[this.fifoHead];
    if (e === undefined) {
      this.destroy('reply without a command');
      return;
    }
    switch (e.kind) {
      case 'slot':
        e.owner.queue.fill(e.slot, raw);
        e.observe?.(v);
        this.touched.add(e.owner);
        e.owner.answered();
        if (--e.count > 0) return;
        break;
      case 'discard':
        if (v.type === 'error')
          this.opts.logger.debug({ command: e.what, reply: v.value }, 'principal redis refused');
        break;
      case 'capture':
        e.owner.answered();
        e.resolve(v);
        break;
      case 'replace':
        e.owner.queue.fill(e.slot, e.bytes);
        this.touched.add(e.owner);
        e.owner.answered();
        break;
    }
    this.fifo[this.fifoHead++] = undefined as never;
    if (this.fifoHead === this.fifo.length) {
      this.fifo.length = 0;
      this.fifoHead = 0;
    } else if (this.fifoHead > 1024 && this.fifoHead * 2 > this.fifo.length) {
      this.fifo.splice(0, this.fifoHead);
      this.fifoHead = 0;
    }
  }

  private answer(e: Expectation, message: string): void {
    switch (e.kind) {
      case 'slot':
        for (let i = 0; i < e.count; i++) {
          e.owner.queue.fill(e.slot, errorReply(message));
          e.owner.answered();
        }
        return;
      case 'capture':
        e.owner.answered();
        e.resolve({ type: 'error', value: message });
        return;
      case 'replace':
        e.owner.queue.fill(e.slot, errorReply(message));
        e.owner.answered();
        return;
      default:
    }
  }

  private fail(): void {
    if (this.closed) return;
    this.closed = true;
    this.corked = false;
    const message = ReplyText.principalUnavailable(this.closeReason);
    const fifo = this.fifo.slice(this.fifoHead);
    this.fifo.length = 0;
    this.fifoHead = 0;
    this.slicer.stop();
    this.batch = [];
    for (const e of fifo) {
      this.answer(e, message);
      if (e.kind !== 'discard') this.touched.add(e.owner);
    }
    this.opts.onClosed(this.closeReason);
    this.notifyOwners();
    this.wakeWriters();
  }
}
