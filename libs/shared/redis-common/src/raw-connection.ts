import type { Socket } from 'node:net';
import { type RespValue, ValueSlicer } from '@pullplane/resp';
import type { Logger } from 'pino';
import { setupCommands } from './connection-setup.js';
import { connectRedis, type RedisEndpoint } from './redis-socket.js';
import { ReplyWaiters } from './reply-waiters.js';

/** A command's reply: the decoded value (to look at) and the bytes Redis sent (to forward). */
export interface RawReply {
  /** Its type and shape; a bulk string that arrived over several reads is left empty (not joined). */
  value: RespValue;
  /** The bytes as Redis sent them: pass these on. */
  raw: Buffer | Buffer[];
}

/** Called once per command: its reply, or why the connection failed before it came. */
export type RawReplyCallback = (reply: RawReply | string) => void;

export interface RawConnectionOptions {
  endpoint: RedisEndpoint;
  /** What every reply on this connection is written in (HELLO 3 when 3). */
  protocol: 2 | 3;
  /** CLIENT SETNAME, so the connection is recognisable in CLIENT LIST. */
  name?: string;
  /** A command not answered within this fails the connection, and every command on it (default 5 s). */
  timeoutMs?: number;
  logger: Logger;
}

interface Waiter {
  done: RawReplyCallback | undefined;
  sentAt: number;
  /** A setup command (AUTH, HELLO…): its reply is dropped. */
  what?: string;
}

/**
 * A connection to a Redis server that forwards replies as bytes: commands go out as encoded
 * RESP, replies are cut at value boundaries and handed back as the bytes Redis sent, in the
 * order the commands were sent. Nothing is parsed into JS values beyond what cutting needs,
 * nothing is re-encoded.
 *
 * It connects on the first command and again on the first command after it lost its socket
 * (a restarted Redis), so there is no retry timer to keep: commands waiting when the socket
 * goes are answered with the reason, and a command never waits longer than `timeoutMs`.
 * Replies are always read, whoever is slow to take them: buffering them is the caller's job.
 */
export class RawConnection {
  private socket: Socket | undefined;
  private slicer: ValueSlicer | undefined;
  private readonly waiters: ReplyWaiters<Waiter>;
  private closeReason: string | undefined;
  private corked = false;
  private closed = false;
  private readonly timeoutMs: number;

  constructor(private readonly opts: RawConnectionOptions) {
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    // Its reply may still come, but the commands behind it on this connection would only
    // wait longer: drop the connection and answer them all now.
    this.waiters = new ReplyWaiters(this.timeoutMs, () => {
      const socket = this.socket;
      this.closeReason = `command timed out after ${this.timeoutMs} ms`;
      socket?.destroy();
      this.fail(socket, this.closeReason);
    });
  }

  /** Sends one encoded command; `done` is called exactly once. */
  send(command: Buffer, done: RawReplyCallback): void {
    if (this.closed) {
      done('connection closed');
      return;
    }
    const socket = this.socket ?? this.open();
    this.push({ done, sentAt: Date.now() });
    // Commands sent in one turn leave in one write.
    if (!this.corked) {
      this.corked = true;
      socket.cork();
      process.nextTick(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    socket.write(command);
  }

  /** Closes the connection for good; waiting commands are answered with 'connection closed'. */
  close(): void {
    this.closed = true;
    this.socket?.destroy();
    this.fail(this.socket, 'connection closed');
  }

  private open(): Socket {
    const { endpoint, logger } = this.opts;
    const slicer = new ValueSlicer({
      // Replies go on as their bytes; only their types (and short errors) are read here.
      joinSplitBulks: false,
      onValue: (v, raw) => this.onReply(socket, v, raw),
      onError: (err) => socket.destroy(new Error(`malformed reply: ${err.message}`)),
    });
    const socket = connectRedis(endpoint, (chunk) => slicer.push(chunk));
    this.socket = socket;
    this.closeReason = undefined;
    this.slicer = slicer;
    socket.on('error', (err) => {
      this.closeReason ??= err.message;
      logger.debug({ err: err.message }, 'redis connection error');
    });
    socket.on('close', () => this.fail(socket, this.closeReason ?? 'connection closed'));
    for (const { command, what } of setupCommands(endpoint, {
      protocol: this.opts.protocol,
      name: this.opts.name,
    })) {
      this.push({ done: undefined, sentAt: Date.now(), what });
      socket.write(command);
    }
    return socket;
  }

  private push(w: Waiter): void {
    this.waiters.push(w);
  }

  private onReply(socket: Socket, v: RespValue, raw: Buffer | Buffer[]): void {
    // RESP3 out-of-band data (client tracking, a stray subscription message) answers no command.
    if (v.type === 'push') return;
    const w = this.waiters.shift();
    if (w === undefined) {
      socket.destroy(new Error('reply without a command'));
      return;
    }
    if (w.done !== undefined) w.done({ value: v, raw });
    else if (v.type === 'error' || v.type === 'blobError') {
      // A refused setup command (a wrong password, HELLO on a Redis before 6): worth a warning;
      // NOAUTH (no password given) the commands after it say in their own replies.
      const reply = String(v.value);
      const level = reply.startsWith('NOAUTH') ? 'debug' : 'warn';
      this.opts.logger[level]({ command: w.what, reply }, 'redis refused a connection setup command');
    }
  }

  /** The socket is gone: everything sent on it is answered with `reason`. */
  private fail(socket: Socket | undefined, reason: string): void {
    if (socket === undefined || socket !== this.socket) return;
    this.socket = undefined;
    this.slicer?.stop();
    this.slicer = undefined;
    for (const w of this.waiters.drain()) w.done?.(reason);
  }
}
