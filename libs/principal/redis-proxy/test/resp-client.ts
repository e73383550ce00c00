import { connect, type Socket } from 'node:net';
import { encodeCommand, RespDecoder, type RespValue } from '@pullplane/resp';

/**
 * A minimal RESP2/RESP3 client on the project's own decoder (ioredis 5 cannot speak RESP3):
 * replies resolve calls in order; pushes are collected separately, as go-redis does.
 */
export class RespClient {
  readonly pushes: RespValue[] = [];
  private readonly waiting: Array<(v: RespValue) => void> = [];
  private pushWaiters: Array<() => void> = [];
  closed = false;

  private constructor(private readonly socket: Socket) {
    const decoder = new RespDecoder({
      onValue: (v) => {
        if (v.type === 'push') {
          this.pushes.push(v);
          const w = this.pushWaiters;
          this.pushWaiters = [];
          for (const wake of w) wake();
        } else {
          this.waiting.shift()?.(v);
        }
      },
      onError: (err) => socket.destroy(err),
    });
    socket.on('data', (d: Buffer) => decoder.push(d));
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => undefined);
  }

  static connect(port: number): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => resolve(new RespClient(socket)));
      socket.once('error', reject);
    });
  }

  call(...args: Array<string | Buffer>): Promise<RespValue> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.socket.write(encodeCommand(args));
    });
  }

  /** Sends a command whose answer is pushes only (RESP3 SUBSCRIBE and friends). */
  send(...args: Array<string | Buffer>): void {
    this.socket.write(encodeCommand(args));
  }

  /** Sends several commands in one write and resolves with their replies in order. */
  pipeline(commands: Array<Array<string | Buffer>>): Promise<RespValue[]> {
    const replies = commands.map(() => new Promise<RespValue>((resolve) => this.waiting.push(resolve)));
    this.socket.write(Buffer.concat(commands.map((c) => encodeCommand(c))));
    return Promise.all(replies);
  }

  /** Resolves once `n` pushes have arrived in total. */
  async waitForPushes(n: number, timeoutMs = 5_000): Promise<RespValue[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.pushes.length < n) {
      if (Date.now() > deadline) throw new Error(`only ${this.pushes.length} of ${n} pushes arrived`);
      await new Promise<void>((resolve) => {
        this.pushWaiters.push(resolve);
        setTimeout(resolve, 50); // wait-ok: re-check bound; woken early by the push
      });
    }
    return this.pushes;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A value as plain JS for assertions: bulk strings as latin1 text, nulls as null. */
export function plain(v: RespValue): unknown {
  switch (v.type) {
    case 'bulk':
      return v.value === null ? null : v.value.toString('latin1');
    case 'array':
      return v.value === null ? null : v.value.map(plain);
    case 'push':
    case 'set':
      return v.value.map(plain);
    case 'map':
      return Object.fromEntries(v.value.map(([k, val]) => [String(plain(k)), plain(val)]));
    case 'null':
      return null;
    case 'simple':
      return v.value;
    case 'error':
      return { error: v.value };
    case 'integer':
      return typeof v.value === 'bigint' ? v.value : v.value;
    case 'verbatim':
    case 'blobError':
      return v.value.toString('latin1');
    default:
      return v.value;
  }
}
