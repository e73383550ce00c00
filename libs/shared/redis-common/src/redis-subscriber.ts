import type { Socket } from 'node:net';
import { encodeCommand, RespDecoder, type RespValue } from '@pullplane/resp';
import type { Logger } from 'pino';
import { connectRedis, type RedisEndpoint, readyEvent } from './redis-socket.js';

export type PubSubKind = 'channel' | 'pattern';

export type PubSubMessage =
  | { kind: 'message'; channel: Buffer; payload: Buffer }
  | { kind: 'pmessage'; pattern: Buffer; channel: Buffer; payload: Buffer };

export interface RedisSubscriberOptions {
  endpoint: RedisEndpoint;
  logger: Logger;
  onMessage: (message: PubSubMessage) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** A silent connection is dropped after this long; PINGs are sent at a third of it. */
  idleTimeoutMs?: number;
}

const key = (kind: PubSubKind, name: Buffer) => `${kind === 'channel' ? 'c' : 'p'}${name.toString('latin1')}`;
const COMMAND = { channel: 'SUBSCRIBE', pattern: 'PSUBSCRIBE' } as const;
const UNCOMMAND = { channel: 'UNSUBSCRIBE', pattern: 'PUNSUBSCRIBE' } as const;
const BATCH = 512;

/**
 * One RESP2 subscriber connection carrying any number of channels and patterns, byte-exact
 * (names are Buffers end to end). It reconnects with backoff and subscribes everything again;
 * subscribe() resolves once Redis confirmed the subscription on the current connection.
 */
export class RedisSubscriber {
  private socket: Socket | undefined;
  private ready = false;
  private closed = false;
  private backoff: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private lastData = 0;
  private readonly wanted = { channel: new Map<string, Buffer>(), pattern: new Map<string, Buffer>() };
  private readonly confirmed = new Set<string>();
  private readonly waiters = new Map<string, Array<() => void>>();
  private refusal: string | undefined;

  constructor(private readonly opts: RedisSubscriberOptions) {
    this.backoff = opts.minBackoffMs ?? 100;
  }

  get connected(): boolean {
    return this.ready;
  }

  /** The error Redis last answered this connection with (NOAUTH…), until a subscription is confirmed. */
  get refused(): string | undefined {
    return this.refusal;
  }

  /** Resolves when Redis has confirmed the subscription (waits across reconnects). */
  subscribe(kind: PubSubKind, name: Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new Error('subscriber closed'));
    const k = key(kind, name);
    if (this.confirmed.has(k)) return Promise.resolve();
    const promise = new Promise<void>((resolve) => {
      const list = this.waiters.get(k);
      if (list) list.push(resolve);
      else this.waiters.set(k, [resolve]);
    });
    if (!this.wanted[kind].has(k)) {
      this.wanted[kind].set(k, name);
      if (this.ready) this.socket!.write(encodeCommand([COMMAND[kind], name]));
    }
    this.ensureConnection();
    return promise;
  }

  unsubscribe(kind: PubSubKind, name: Buffer): void {
    const k = key(kind, name);
    if (!this.wanted[kind].delete(k)) return;
    this.confirmed.delete(k);
    // Whoever still waits no longer cares: do not leave them hanging.
    const list = this.waiters.get(k);
    this.waiters.delete(k);
    for (const wake of list ?? []) wake();
    if (this.ready) this.socket!.write(encodeCommand([UNCOMMAND[kind], name]));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    this.socket?.destroy();
    this.socket = undefined;
    this.waiters.clear();
  }

  private ensureConnection(): void {
    if (this.socket || this.retryTimer || this.closed) return;
    const { endpoint, logger } = this.opts;
    const decoder = new RespDecoder({
      onValue: (v) => this.onValue(v),
      onError: (err) => {
        logger.warn({ err: err.message }, 'malformed reply on the redis subscriber connection');
        socket.destroy();
      },
    });
    const socket = connectRedis(endpoint, (chunk) => {
      this.lastData = Date.now();
      decoder.push(chunk);
    });
    this.socket = socket;
    socket.once(readyEvent(endpoint), () => {
      this.ready = true;
      this.lastData = Date.now();
      const out: Buffer[] = [];
      if (endpoint.password) out.push(encodeCommand(['AUTH', endpoint.password]));
      for (const kind of ['channel', 'pattern'] as const) {
        const names = [...this.wanted[kind].values()];
        for (let i = 0; i < names.length; i += BATCH)
          out.push(encodeCommand([COMMAND[kind], ...names.slice(i, i + BATCH)]));
      }
      if (out.length > 0) socket.write(Buffer.concat(out));
      const idle = this.opts.idleTimeoutMs ?? 45_000;
      this.pingTimer = setInterval(() => {
        if (Date.now() - this.lastData > idle) socket.destroy(new Error('subscriber connection went silent'));
        else socket.write(encodeCommand(['PING']));
      }, idle / 3);
      this.pingTimer.unref();
    });
    socket.on('error', (err) => logger.debug({ err: err.message }, 'redis subscriber connection error'));
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      this.ready = false;
      clearInterval(this.pingTimer);
      this.confirmed.clear();
      if (this.closed) return;
      const delay = this.backoff;
      this.backoff = Math.min(this.backoff * 2, this.opts.maxBackoffMs ?? 2_000);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        if (this.wanted.channel.size + this.wanted.pattern.size > 0) this.ensureConnection();
      }, delay);
      this.retryTimer.unref();
    });
  }

  private onValue(v: RespValue): void {
    if (v.type === 'error') {
      this.opts.logger.warn({ reply: v.value }, 'redis subscriber connection refused');
      this.refusal = v.value;
      if (/^(NOAUTH|WRONGPASS|NOPERM)/.test(v.value)) this.socket?.destroy();
      return;
    }
    if ((v.type !== 'array' && v.type !== 'push') || v.value === null) return;
    const [kindV, a, b, c] = v.value;
    if (kindV?.type !== 'bulk' || kindV.value === null) return;
    const kind = kindV.value.toString('latin1').toLowerCase();
    const buf = (x: RespValue | undefined) => (x?.type === 'bulk' && x.value !== null ? x.value : undefined);
    if (kind === 'message') {
      const channel = buf(a);
      const payload = buf(b);
      if (channel && payload) this.opts.onMessage({ kind: 'message', channel, payload });
    } else if (kind === 'pmessage') {
      const pattern = buf(a);
      const channel = buf(b);
      const payload = buf(c);
      if (pattern && channel && payload) this.opts.onMessage({ kind: 'pmessage', pattern, channel, payload });
    } else if (kind === 'subscribe' || kind === 'psubscribe') {
      const name = buf(a);
      if (!name) return;
      this.backoff = this.opts.minBackoffMs ?? 100;
      this.refusal = undefined;
      const k = key(kind === 'subscribe' ? 'channel' : 'pattern', name);
      if (!this.wanted[kind === 'subscribe' ? 'channel' : 'pattern'].has(k)) return;
      this.confirmed.add(k);
      const list = this.waiters.get(k);
      this.waiters.delete(k);
      for (const wake of list ?? []) wake();
    }
  }
}
