import type { PubSubKind, PubSubMessage, SubscriptionSource } from '@pullplane/redis-common';
import { toClientName } from '@pullplane/redis-common';
import { RespDecoder, type RespValue } from '@pullplane/resp';
import type { TunnelStream } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { type AgentOpener, tunnelFailure } from './agent-call.js';
import type { KeyRouter } from './key-routing.js';

export interface AgentSubscriptionsOptions {
  opener: AgentOpener;
  keys: KeyRouter;
  logger: Logger;
  onMessage: (message: PubSubMessage) => void;
  /** Largest message accepted from an agent. */
  maxMessageBytes: number;
  /** Each attempt to open a subscription stream to an agent (`failed`: it could not be opened). */
  onStream?: (agent: string, command: 'subscribe' | 'psubscribe', failed: boolean) => void;
  /** An open subscription stream broke (it is opened again). */
  onStreamLost?: (agent: string, command: 'subscribe' | 'psubscribe') => void;
  /** Retry delays while an agent is away or its stream failed. */
  minRetryMs?: number;
  maxRetryMs?: number;
}

const subKey = (kind: PubSubKind, name: Buffer) =>
  `${kind === 'channel' ? 'c' : 'p'}${name.toString('latin1')}`;
const bulk = (v: RespValue | undefined) => (v?.type === 'bulk' && v.value !== null ? v.value : undefined);

/**
 * Subscriptions to agent channels and patterns: one long-lived logical stream each, opened
 * again whenever it ends while still wanted (agent restarted, moved to another gateway, tunnel
 * lost). Closing a subscription resets its stream, which releases it on the agent.
 */
export class AgentSubscriptions implements SubscriptionSource {
  private readonly subs = new Map<string, AgentSubscription>();

  constructor(private readonly opts: AgentSubscriptionsOptions) {}

  get size(): number {
    return this.subs.size;
  }

  start(kind: PubSubKind, name: Buffer): Promise<void> {
    const route = this.opts.keys.route(name);
    if (route.kind !== 'agent') return Promise.reject(new Error('not an agent channel'));
    const sub = new AgentSubscription(this.opts, kind, name, route.agent, route.prefixLength);
    this.subs.set(subKey(kind, name), sub);
    return sub.ready;
  }

  stop(kind: PubSubKind, name: Buffer): void {
    const k = subKey(kind, name);
    this.subs.get(k)?.close();
    this.subs.delete(k);
  }

  /** Whether the subscription's stream is currently live (tests, metrics). */
  isLive(kind: PubSubKind, name: Buffer): boolean {
    return this.subs.get(subKey(kind, name))?.live ?? false;
  }

  closeAll(): void {
    for (const sub of this.subs.values()) sub.close();
    this.subs.clear();
  }
}

class AgentSubscription {
  readonly ready: Promise<void>;
  live = false;
  private resolveReady!: () => void;
  private stream: TunnelStream | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private delay: number;
  private lastFailure = '';

  constructor(
    private readonly opts: AgentSubscriptionsOptions,
    private readonly kind: PubSubKind,
    private readonly name: Buffer,
    private readonly agent: string,
    private readonly prefixLength: number,
  ) {
    this.ready = new Promise((resolve) => {
      this.resolveReady = resolve;
    });
    this.delay = opts.minRetryMs ?? 100;
    this.attempt();
  }

  private get command(): 'subscribe' | 'psubscribe' {
    return this.kind === 'channel' ? 'subscribe' : 'psubscribe';
  }

  close(): void {
    this.closed = true;
    this.live = false;
    clearTimeout(this.timer);
    this.stream?.destroy();
    this.stream = undefined;
  }

  private retry(reason: string): void {
    this.live = false;
    this.stream = undefined;
    if (this.closed) return;
    if (reason !== this.lastFailure) {
      this.opts.logger.info({ agent: this.agent, reason }, 'agent subscription down; retrying');
      this.lastFailure = reason;
    }
    this.timer = setTimeout(() => this.attempt(), this.delay);
    this.delay = Math.min(this.delay * 2, this.opts.maxRetryMs ?? 1_000);
  }

  private attempt(): void {
    if (this.closed) return;
    // Away: poll the local presence table, which the presence watch keeps current.
    if (this.opts.opener.lookup(this.agent) === undefined) {
      this.timer = setTimeout(() => this.attempt(), this.opts.minRetryMs ?? 100);
      return;
    }
    let stream: TunnelStream;
    try {
      stream = this.opts.opener.open(this.agent, {
        head: {
          case: 'redis',
          value: {
            args: [Buffer.from(this.kind === 'channel' ? 'SUBSCRIBE' : 'PSUBSCRIBE'), this.name],
            respVersion: 3,
          },
        },
      });
    } catch (err) {
      this.opts.onStream?.(this.agent, this.command, true);
      this.retry(tunnelFailure(this.agent, err));
      return;
    }
    this.opts.onStream?.(this.agent, this.command, false);
    this.stream = stream;
    const decoder = new RespDecoder({
      maxBulkLength: this.opts.maxMessageBytes,
      onValue: (v) => this.deliver(v),
      onError: (err) => stream.destroy(err),
    });
    stream.responseHead().then(
      (head) => {
        if (this.stream !== stream) return;
        if (head.status !== 200) {
          stream.destroy();
          return;
        }
        this.live = true;
        this.lastFailure = '';
        this.delay = this.opts.minRetryMs ?? 100;
        this.resolveReady();
      },
      () => undefined,
    );
    stream.on('data', (chunk: Buffer) => decoder.push(chunk));
    stream.on('end', () => stream.destroy());
    stream.on('close', () => {
      if (this.stream !== stream) return;
      if (stream.errored) this.opts.onStreamLost?.(this.agent, this.command);
      this.retry(
        stream.errored ? tunnelFailure(this.agent, stream.errored) : 'the agent ended the subscription',
      );
    });
  }

  private deliver(v: RespValue): void {
    if ((v.type !== 'push' && v.type !== 'array') || v.value === null) return;
    const [k, a, b, c] = v.value;
    const kind = bulk(k)?.toString('latin1');
    if (this.kind === 'channel' && kind === 'message') {
      const payload = bulk(b);
      if (payload) this.opts.onMessage({ kind: 'message', channel: this.name, payload });
    } else if (this.kind === 'pattern' && kind === 'pmessage') {
      const channel = bulk(b);
      const payload = bulk(c);
      if (!bulk(a) || !channel || !payload) return;
      // The local channel matched the local pattern, so it starts with the literal prefix.
      if (
        channel.length < this.prefixLength ||
        channel.compare(this.name, 0, this.prefixLength, 0, this.prefixLength) !== 0
      )
        return;
      this.opts.onMessage({
        kind: 'pmessage',
        pattern: this.name,
        channel: toClientName(channel, this.prefixLength, this.agent),
        payload,
      });
    }
  }
}
