import type { Tracer } from '@opentelemetry/api';
import {
  AGENT_COMMANDS,
  type PubSubKind,
  type PubSubListener,
  RawConnection,
  type RawReply,
  type RedisEndpoint,
  RedisSubscriber,
  SubscriptionHub,
  toLocalName,
} from '@pullplane/redis-common';
import {
  encode,
  encodeCommand,
  errorReply,
  RespDecoder,
  type RespProtocol,
  rawLength,
  resp,
} from '@pullplane/resp';
import { endRedisCommandSpan, startRedisCommandSpan } from '@pullplane/tracing';
import { type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';

export interface RedisExecutorOptions {
  /**
   * This agent's name: keys that name another agent are refused. Without it only the key's
   * shape is checked (the gateway routes only this agent's streams here either way).
   */
  agentName: string | undefined;
  /** The agent's local Redis (Argo CD's argocd-redis on this cluster). */
  endpoint: RedisEndpoint;
  logger: Logger;
  /** Connections to the local Redis for commands, per protocol clients speak (default 4). */
  poolSize?: number;
  /**
   * A command the local Redis does not answer in time fails, with those behind it on its
   * connection, which is replaced (default 5 s).
   */
  commandTimeoutMs?: number;
  /** Commands of one pipeline running on the local Redis at once (default 128). */
  maxPipelineInflight?: number;
  /** Replies of one pipeline held for a proxy not reading them before no new command starts (default 4 MiB). */
  maxPipelineReplyBytes?: number;
  /** Unsent messages on one subscription stream before it is dropped as too slow (default 1 MiB). */
  maxPendingPushBytes?: number;
  /**
   * Each command served (`name` lower-cased, 'unknown' when not one this executor runs);
   * `failed`: refused, or the local Redis could not run it.
   */
  onCommand?: (name: string, failed: boolean) => void;
  /** Set when traces are exported: a client span per command run on the local Redis. */
  tracer?: Tracer | undefined;
}

/** A reply of a pipeline, in command order: unset until the local Redis answered. */
interface Slot {
  bytes: Buffer | Buffer[] | undefined;
  length: number;
}

/** Writes a reply as it came (one buffer, or its pieces); false when the stream wants a drain. */
function writeReply(stream: LogicalStream, bytes: Buffer | Buffer[]): boolean {
  if (Buffer.isBuffer(bytes)) return stream.write(bytes);
  let ok = true;
  for (const part of bytes) ok = stream.write(part);
  return ok;
}

const isError = (reply: RawReply) => reply.value.type === 'error' || reply.value.type === 'blobError';

/**
 * The agent's side of the redis proxy: runs the commands the proxy routes here against the
 * local Redis with `<agent>_` cut out of every key, and serves channel subscriptions as
 * long-lived streams of pushes, released when the stream ends. Commands run on raw
 * connections opened in the protocol the client speaks, and each reply goes back as the bytes
 * the local Redis sent, so neither side re-encodes it.
 */
export class RedisExecutor {
  /** `poolSize` connections per protocol, opened as first needed. */
  private readonly pools = new Map<RespProtocol, RawConnection[]>();
  private next = 0;
  private readonly subscriber: RedisSubscriber;
  private readonly hub: SubscriptionHub;
  private readonly log: Logger;

  constructor(private readonly opts: RedisExecutorOptions) {
    this.log = opts.logger.child({ component: 'redis' });
    if (!opts.agentName) this.log.warn('agent name unknown: redis keys are checked for their shape only');
    this.subscriber = new RedisSubscriber({
      endpoint: opts.endpoint,
      logger: this.log,
      onMessage: (m) => this.hub.dispatch(m),
    });
    this.hub = new SubscriptionHub({
      start: (kind, name) => this.subscriber.subscribe(kind, name),
      stop: (kind, name) => this.subscriber.unsubscribe(kind, name),
    });
  }

  /** Serves one logical stream whose head is a RedisRequestHead. */
  handle(stream: LogicalStream): void {
    const head = stream.open.head;
    if (head.case !== 'redis') {
      stream.reset(TunnelErrorCode.PROTOCOL, 'not a redis request');
      return;
    }
    const protocol: RespProtocol = head.value.respVersion === 3 ? 3 : 2;
    if (head.value.pipeline) {
      this.pipeline(stream, protocol);
      return;
    }
    if (head.value.args.length === 0) {
      stream.reset(TunnelErrorCode.PROTOCOL, 'a redis request without a command');
      return;
    }
    const args = head.value.args.map((a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    const name = args[0]!.toString('latin1').toLowerCase();
    if (name === 'subscribe' || name === 'psubscribe') {
      this.opts.onCommand?.(name, false);
      this.subscribe(stream, name === 'subscribe' ? 'channel' : 'pattern', args, protocol);
      return;
    }
    this.execute(args, this.connection(protocol), (bytes) => {
      if (stream.destroyed) return;
      stream.respond(200);
      writeReply(stream, bytes);
      stream.end();
    });
  }

  /**
   * A pipeline: commands arrive as RESP in the request body and run in order on one local
   * connection; replies go back in the same order. Memory stays bounded whatever the client
   * sends: at most `maxPipelineInflight` commands run at once, none starts while the replies
   * waiting to be sent exceed `maxPipelineReplyBytes`, and reading the body stops while
   * decoded commands wait, so the proxy's credit holds the rest back.
   */
  private pipeline(stream: LogicalStream, protocol: RespProtocol): void {
    stream.respond(200);
    const redis = this.connection(protocol);
    const maxInflight = this.opts.maxPipelineInflight ?? 128;
    const maxReplyBytes = this.opts.maxPipelineReplyBytes ?? 4 * 1024 * 1024;
    const waiting: Buffer[][] = [];
    const out: Slot[] = [];
    let inflight = 0;
    let held = 0;
    let waitingForDrain = false;
    let ended = false;
    const hold = (bytes: number) => {
      held += bytes;
      this.pipelineReplyBytes += bytes;
      if (this.pipelineReplyBytes > this.pipelineReplyBytesPeak)
        this.pipelineReplyBytesPeak = this.pipelineReplyBytes;
    };
    stream.once('close', () => {
      this.pipelineReplyBytes -= held;
      held = 0;
    });
    const flush = () => {
      while (!waitingForDrain && out.length > 0 && out[0]!.bytes !== undefined && !stream.destroyed) {
        const slot = out.shift()!;
        hold(-slot.length);
        if (!writeReply(stream, slot.bytes!)) {
          waitingForDrain = true;
          stream.once('drain', () => {
            waitingForDrain = false;
            flush();
          });
        }
      }
      if (ended && out.length === 0 && waiting.length === 0 && !stream.destroyed) stream.end();
      else pump();
    };
    // Commands refused here are answered at once, from inside the loop below: the flush that
    // answer triggers must not start the loop again, or a run of them recurses per command.
    let pumping = false;
    const pump = () => {
      if (pumping) return;
      pumping = true;
      while (waiting.length > 0 && inflight < maxInflight && held < maxReplyBytes && !stream.destroyed) {
        const args = waiting.shift()!;
        const slot: Slot = { bytes: undefined, length: 0 };
        out.push(slot);
        inflight++;
        this.execute(args, redis, (bytes) => {
          inflight--;
          slot.bytes = bytes;
          slot.length = rawLength(bytes);
          if (!stream.destroyed) hold(slot.length);
          flush();
        });
      }
      pumping = false;
      // Decoded commands still wait: stop reading so the peer's credit stops growing.
      if (waiting.length > 0) stream.pause();
      else if (!ended) stream.resume();
    };
    const decoder = new RespDecoder({
      mode: 'server',
      onCommand: (args) => waiting.push(args),
      onError: (err) => stream.reset(TunnelErrorCode.PROTOCOL, err.message),
    });
    stream.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      pump();
    });
    stream.on('end', () => {
      ended = true;
      flush();
    });
  }

  /** Replies of pipelines held here now, and the most ever held at once (all streams). */
  pipelineStats(): { replyBytes: number; peakReplyBytes: number } {
    return { replyBytes: this.pipelineReplyBytes, peakReplyBytes: this.pipelineReplyBytesPeak };
  }

  private pipelineReplyBytes = 0;
  private pipelineReplyBytesPeak = 0;

  /**
   * Runs one command (checked, keys cut) and hands `done` its reply as the bytes the local
   * Redis sent (in the connection's protocol), or an error reply; `done` is called exactly once.
   */
  private execute(args: Buffer[], redis: RawConnection, done: (bytes: Buffer | Buffer[]) => void): void {
    const name = args[0]!.toString('latin1').toLowerCase();
    const spec = AGENT_COMMANDS.get(name);
    const count = this.opts.onCommand;
    if (spec === undefined) {
      count?.('unknown', true);
      done(errorReply(`ERR unsupported command for agent key: '${name}'`));
      return;
    }
    const local = args.slice();
    for (let i = 1; i < local.length; i++) {
      if (spec.keys === 'first' && i > 1) break;
      const cut = toLocalName(local[i]!, this.opts.agentName || undefined);
      if (typeof cut === 'string') {
        this.log.warn({ command: name, reason: cut }, 'refused a redis key');
        count?.(name, true);
        done(errorReply(`ERR agent ${this.opts.agentName ?? ''} refused the key: ${cut}`));
        return;
      }
      local[i] = cut.local;
    }
    const span = this.opts.tracer
      ? startRedisCommandSpan(this.opts.tracer, 'agent', args[0]!, {
          agent: this.opts.agentName,
          server: this.opts.endpoint,
        })
      : undefined;
    redis.send(encodeCommand(local), (reply) => {
      if (typeof reply === 'string') {
        count?.(name, true);
        if (span) endRedisCommandSpan(span, 'unavailable');
        done(errorReply(`ERR agent ${this.opts.agentName ?? ''} local redis unavailable: ${reply}`));
        return;
      }
      // A Redis error reply (WRONGTYPE…) is an answer; an unreachable Redis is a failure.
      count?.(name, false);
      const refused = isError(reply);
      if (span) endRedisCommandSpan(span, refused ? 'reply_error' : undefined);
      if (refused && !this.opts.endpoint.password && reply.value.type === 'error') {
        const message = reply.value.value;
        if (message.startsWith('NOAUTH')) {
          done(errorReply(this.noPassword(message)));
          return;
        }
      }
      done(reply.raw);
    });
  }

  async stop(): Promise<void> {
    this.subscriber.close();
    for (const pool of this.pools.values()) for (const c of pool) c.close();
    this.pools.clear();
  }

  private warnedNoPassword = false;

  /**
   * The local Redis wants a password and the agent has none (the bundles' REDIS_PASSWORD is
   * optional, for clusters without Argo CD): the reply says so, and the log once.
   */
  private noPassword(reply: string): string {
    const why = `the agent${this.opts.agentName ? ` ${this.opts.agentName}` : ''} has no password for its local redis (--redis-password, REDIS_PASSWORD: Secret argocd-redis, key auth)`;
    if (!this.warnedNoPassword) {
      this.warnedNoPassword = true;
      this.log.warn({ reply }, `the local redis requires a password and ${why}`);
    }
    return `${reply.replace(/\.$/, '')}: ${why}`;
  }

  /**
   * A connection for `protocol`, taken in turn from its pool. Several streams share one: its
   * replies are always read and handed to each stream's own bounded buffer, so a stream whose
   * reader is slow holds back only its own commands.
   */
  private connection(protocol: RespProtocol): RawConnection {
    let pool = this.pools.get(protocol);
    if (pool === undefined) {
      pool = Array.from(
        { length: this.opts.poolSize ?? 4 },
        () =>
          new RawConnection({
            endpoint: this.opts.endpoint,
            protocol,
            name: 'pullplane-agent',
            timeoutMs: this.opts.commandTimeoutMs ?? 5_000,
            logger: this.log,
          }),
      );
      this.pools.set(protocol, pool);
    }
    const c = pool[this.next % pool.length]!;
    this.next = (this.next + 1) % pool.length;
    return c;
  }

  private subscribe(stream: LogicalStream, kind: PubSubKind, args: Buffer[], protocol: RespProtocol): void {
    if (args.length !== 2) {
      stream.reset(TunnelErrorCode.REFUSED, 'one channel or pattern per subscription stream');
      return;
    }
    const cut = toLocalName(args[1]!, this.opts.agentName || undefined);
    if (typeof cut === 'string') {
      this.log.warn({ reason: cut }, 'refused a redis subscription');
      stream.reset(TunnelErrorCode.REFUSED, `channel refused: ${cut}`);
      return;
    }
    const maxPending = this.opts.maxPendingPushBytes ?? 1024 * 1024;
    let live = false;
    const listener: PubSubListener = (m) => {
      if (!live || stream.destroyed) return;
      const items =
        m.kind === 'message'
          ? [resp.bulk('message'), resp.bulk(m.channel), resp.bulk(m.payload)]
          : [resp.bulk('pmessage'), resp.bulk(m.pattern), resp.bulk(m.channel), resp.bulk(m.payload)];
      stream.write(encode(resp.push(items), { protocol }));
      // The proxy stopped reading: drop the subscription rather than queue without bound.
      if (stream.writableLength > maxPending) stream.reset(TunnelErrorCode.INTERNAL, 'subscriber too slow');
    };
    const timer = setTimeout(() => {
      const refused = this.subscriber.refused;
      stream.reset(
        TunnelErrorCode.UNAVAILABLE,
        refused === undefined
          ? 'the local redis did not confirm the subscription'
          : `the local redis refused the subscription: ${
              !this.opts.endpoint.password && refused.startsWith('NOAUTH')
                ? this.noPassword(refused)
                : refused
            }`,
      );
    }, this.opts.commandTimeoutMs ?? 5_000);
    stream.once('close', () => {
      clearTimeout(timer);
      this.hub.remove(kind, cut.local, listener);
    });
    this.hub.add(kind, cut.local, listener).then(
      () => {
        clearTimeout(timer);
        if (stream.destroyed) return;
        live = true;
        stream.respond(200);
      },
      (err: Error) => stream.reset(TunnelErrorCode.UNAVAILABLE, err.message),
    );
  }
}
