import type { Socket } from 'node:net';
import {
  type AcceptedReads,
  type PubSubKind,
  type PubSubMessage,
  readAccepted,
} from '@pullplane/redis-common';
import {
  commandFromArgs,
  encode,
  encodeCommand,
  errorReply,
  type RespCommand,
  RespDecoder,
  type RespError,
  type RespValue,
  simpleString,
} from '@pullplane/resp';
import { endRedisCommandSpan, startRedisCommandSpan } from '@pullplane/tracing';
import type { AgentReply } from './agent-call.js';
import { AgentPipelines } from './agent-pipeline.js';
import { BufferShare } from './buffer-budget.js';
import { gate } from './command-gate.js';
import { type CommandRoute, routeOf } from './command-routing.js';
import type { CommandSession, SessionState } from './commands/spec.js';
import { type Command, needsOwnConnection } from './commands/table.js';
import { ReplyText } from './errors.js';
import { InputGuard } from './input-guard.js';
import { PrincipalAccess } from './principal-access.js';
import type { Expectation, PrincipalLink } from './principal-link.js';
import type { SharedPrincipalLinks } from './principal-pool.js';
import type { ProxyContext } from './proxy-context.js';
import { PubSubSession } from './pubsub-session.js';
import { ReplyQueue } from './reply-queue.js';
import { runSplit, type SplitRoute } from './split-command.js';
import { Transaction, type TransactionTargets } from './transaction.js';

// Why the proxy stopped reading the client's commands (any set bit keeps it stopped).
const CLIENT_WRITE = 1;
const UPSTREAM_WRITE = 2;
const PIPELINE = 4;
const HOLD = 8;
const INPUT = 16;

const STAR = 0x2a;

/** A command waiting for its turn: parsed, all its arguments (the name first), its bytes as received. */
type Held = [RespCommand, Buffer[], Buffer | Buffer[]];

/**
 * One client connection: decodes its commands, answers protocol-level ones itself, routes
 * the rest to the principal Redis or an agent, and writes every reply in request order. What
 * each command needs is a field of its entry in the command table (commands/).
 */
export class ClientConnection implements CommandSession {
  readonly state: SessionState;
  private db = 0;
  private readonly decoder: RespDecoder;
  private readonly input: InputGuard;
  private readonly replies: BufferShare;
  private readonly queue: ReplyQueue;
  private readonly pubsub: PubSubSession;
  private readonly principal: PrincipalAccess;
  private readonly agents: AgentPipelines;
  private readonly tx = new Transaction();
  private readonly txTargets: TransactionTargets;
  /** Commands waiting until the principal owes nothing (see PrincipalAccess). */
  private held: Held[] | undefined;
  private paused = 0;
  private closing = false;
  private closed = false;
  /** The proxy ended its side of a closing connection (once: end, read to the FIN, drop timer). */
  private ended = false;
  private readonly reads: AcceptedReads;
  private flushScheduled = false;
  private authTimer: NodeJS.Timeout | undefined;
  /** Whether the decoder's limits and the AUTH clock are those of an authenticated client. */
  private limitsFor: boolean | undefined;
  // The command being decoded spans carry + chunk[rawStart, end).
  private chunk: Buffer = Buffer.alloc(0);
  private rawStart = 0;
  private carry: Buffer[] = [];

  constructor(
    private readonly socket: Socket,
    private readonly ctx: ProxyContext,
    shared: SharedPrincipalLinks,
    private readonly onClose: (c: ClientConnection) => void,
  ) {
    this.state = {
      id: ctx.nextClientId(),
      protocol: 2,
      authenticated: ctx.password === undefined,
      name: undefined,
    };
    const { limits } = ctx;
    this.input = new InputGuard(limits, ctx.budget, () => this.agents.queuedBytes);
    this.replies = new BufferShare(ctx.budget, 'reply');
    this.decoder = new RespDecoder({
      mode: 'server',
      ...this.input.decoderLimits(this.state.authenticated),
      onCommand: (args, end) => this.onCommand(args, end),
      admit: (bytes, args) => this.input.admit(bytes, args),
      onError: (err) => this.onProtocolError(err),
    });
    this.queue = new ReplyQueue((chunks, bytes) => this.write(chunks, bytes));
    this.pubsub = new PubSubSession(ctx.hubs, (m) => this.deliver(m));
    this.principal = new PrincipalAccess(this.queue, ctx, shared, {
      state: () => ({ protocol: this.state.protocol, db: this.db, name: this.state.name }),
      flush: () => this.flush(),
      idle: () => {
        if (this.held) queueMicrotask(() => this.release());
      },
      dedicatedLost: (reason) => {
        if (this.closed) return;
        this.ctx.logger.info({ client: this.state.id, reason }, 'principal redis connection lost');
        // Transaction and WATCH state lived on that connection.
        this.tx.abandon();
      },
    });
    this.agents = new AgentPipelines({
      opener: ctx.opener,
      timeoutMs: ctx.requestTimeoutMs,
      maxReplyBytes: limits.maxBulkLength * 2,
      onReply: (seconds, agent, command, failed) => {
        ctx.metrics.agentSeconds.observe(seconds);
        ctx.metrics.agentCommand?.(agent, command, failed);
      },
      onDrain: () => this.checkInput(),
    });
    this.txTargets = {
      keys: ctx.keys,
      forward: (raw) => this.forward(raw),
      replace: (command, bytes) =>
        this.send(command, { kind: 'replace', owner: this.principal, slot: this.queue.defer(1), bytes }),
      reply: (bytes) => this.reply(bytes),
    };
    socket.setNoDelay(true);
    this.reads = readAccepted(socket, (chunk) => this.onData(chunk));
    socket.on('error', (err) =>
      ctx.logger.debug({ client: this.state.id, err: err.message }, 'client socket error'),
    );
    socket.on('close', () => this.teardown());
    this.authenticationChanged();
  }

  /** Closes the connection now (shutdown). */
  destroy(): void {
    this.socket.destroy();
  }

  /** Reads no more commands and closes once every owed reply is written (graceful shutdown). */
  drain(): void {
    this.closing = true;
    this.socket.pause();
    this.flush();
  }

  // ---- input ----

  private onData(chunk: Buffer): void {
    // Closing: every command from here on is dropped unread (see flush).
    if (this.closing) return;
    this.chunk = chunk;
    this.rawStart = 0;
    const own = this.principal.own;
    own?.cork();
    this.decoder.push(chunk);
    if (!this.closed && this.rawStart < chunk.length) this.carry.push(chunk.subarray(this.rawStart));
    own?.uncork();
    this.flush();
  }

  private onCommand(all: Buffer[], end: number): void {
    // The bytes as received, to forward unchanged; inline commands are re-encoded as multibulk.
    const first = this.carry.length > 0 ? this.carry[0]![0] : this.chunk[this.rawStart];
    const tail = this.chunk.subarray(this.rawStart, end);
    const raw = first !== STAR ? encodeCommand(all) : this.carry.length === 0 ? tail : [...this.carry, tail];
    if (this.carry.length > 0) this.carry = [];
    this.rawStart = end;
    this.input.commandDone();
    if (this.closing) return;
    const cmd = commandFromArgs(all);
    if (this.held) this.hold([cmd, all, raw]);
    else this.dispatch(cmd, all, raw);
  }

  private onProtocolError(err: RespError): void {
    this.input.commandDone();
    this.carry = [];
    const { reply, limit } = this.input.describe(err, this.state.authenticated);
    if (limit === undefined) {
      this.ctx.metrics.protocolErrors.inc();
      this.ctx.logger.info({ client: this.state.id, err: err.message }, 'client protocol error; closing');
    } else {
      this.ctx.metrics.limitHit(limit);
      this.ctx.logger.info({ client: this.state.id, limit, reply }, 'client went over a limit; closing');
    }
    const bytes = errorReply(reply);
    // After whatever is held, like every reply.
    if (this.held) this.hold([{ name: '', args: [] }, [], bytes]);
    else this.queue.ready(bytes);
    this.closing = true;
    this.socket.pause();
  }

  private hold(entry: Held): void {
    this.held!.push(entry);
    this.input.hold(byteLength(entry[2]));
  }

  /** Runs the held commands once the principal owes nothing more. */
  private release(): void {
    const held = this.held;
    if (!held || this.principal.outstanding > 0 || this.closed) return;
    this.held = undefined;
    for (let i = 0; i < held.length; i++) {
      if (this.held) {
        (this.held as Held[]).push(...held.slice(i));
        break;
      }
      const [cmd, all, raw] = held[i]!;
      this.input.unhold(byteLength(raw));
      if (cmd.name === '') this.queue.ready(raw as Buffer);
      else this.dispatch(cmd, all, raw);
    }
    if (!this.held) this.unpause(HOLD);
    this.flush();
  }

  private dispatch(cmd: RespCommand, all: Buffer[], raw: Buffer | Buffer[]): void {
    const { name, args } = cmd;
    if (name === 'post' || name === 'host:') {
      // An HTTP request sent to the Redis port (cross-protocol scripting): Redis drops these too.
      this.ctx.logger.warn({ client: this.state.id }, 'HTTP request on the redis port; closing');
      this.socket.destroy();
      return;
    }
    const command = this.ctx.commands.get(name);
    const { authenticated, protocol } = this.state;
    const refused = gate(
      command,
      cmd,
      { authenticated, protocol, subscriptions: this.pubsub.count },
      this.ctx,
    );
    if (refused !== undefined) {
      // Inside MULTI a command the allow-list refuses fails the transaction, as any error while queueing does.
      if (refused.allowList) this.tx.fail();
      this.reply(refused.reply);
      return;
    }
    if (this.principal.mustWait(command, args)) {
      this.held = [];
      this.hold([cmd, all, raw]);
      this.pause(HOLD);
      return;
    }
    if (!this.principal.usesOwnLink && needsOwnConnection(command, args)) this.principal.takeOwnLink();
    if (this.tx.active && this.tx.handle(cmd, command, raw, this.txTargets)) return;
    if (command?.local !== undefined) {
      this.ctx.metrics.routed.local.inc();
      command.local(this, cmd, raw);
    } else if (command?.relay !== undefined) {
      command.relay(this, cmd, raw);
    } else {
      this.route(cmd, all, raw, command);
    }
  }

  // ---- what local answers do (CommandSession) ----

  get password(): string | undefined {
    return this.ctx.password;
  }

  get subscriptions(): number {
    return this.pubsub.count;
  }

  replay(args: ReadonlyArray<string | Buffer>, what: string): void {
    this.principal.own?.internal(args, what);
  }

  selected(db: number): void {
    this.db = db;
  }

  quit(): void {
    this.reply(simpleString('OK'));
    this.closing = true;
    this.socket.pause();
  }

  beginTransaction(): void {
    this.tx.begin();
  }

  unsubscribe(kind: PubSubKind, names: Buffer[]): void {
    for (const frame of this.pubsub.unsubscribe(kind, names, this.state.protocol)) this.reply(frame);
  }

  /** Limits follow authentication: tight until AUTH succeeds, and again after RESET. */
  authenticationChanged(): void {
    // Only a change counts: a failed AUTH must not restart the clock.
    if (this.limitsFor === this.state.authenticated) return;
    this.limitsFor = this.state.authenticated;
    this.decoder.setLimits(this.input.decoderLimits(this.state.authenticated));
    clearTimeout(this.authTimer);
    this.authTimer = undefined;
    const ms = this.ctx.limits.unauthenticatedTimeoutMs;
    if (!this.state.authenticated && ms > 0) this.authTimer = setTimeout(() => this.authTimedOut(), ms);
  }

  /** A connection that does not authenticate in time holds a slot and buffers for nothing. */
  private authTimedOut(): void {
    if (this.closed || this.closing || this.state.authenticated) return;
    this.ctx.metrics.limitHit('unauthenticated_timeout');
    this.ctx.logger.info({ client: this.state.id }, 'client did not authenticate in time; closing');
    this.reply(errorReply(ReplyText.authTimeout(this.ctx.limits.unauthenticatedTimeoutMs)));
    this.closing = true;
    this.socket.pause();
    this.flush();
  }

  private route(cmd: RespCommand, all: Buffer[], raw: Buffer | Buffer[], command: Command | undefined): void {
    const route: CommandRoute = routeOf(command, cmd.name, cmd.args, this.ctx.keys);
    const m = this.ctx.metrics.routed;
    switch (route.kind) {
      case 'principal':
        m.principal.inc();
        this.forward(raw);
        return;
      case 'agent': {
        m.agent.inc();
        const slot = this.queue.defer(1);
        this.checkPipeline();
        void this.agentCall(route.agent, all, raw).then((reply) => {
          if (this.closed) return;
          this.queue.fill(slot, reply.raw);
          this.flush();
        });
        this.checkInput();
        return;
      }
      case 'split':
        m.split.inc();
        this.split(cmd, all, route);
        return;
      case 'refused':
        m.refused.inc();
        this.reply(errorReply(route.message));
        return;
    }
  }

  // ---- destinations ----

  /** Sends the command as received; its reply goes to the client as received. */
  forward(raw: Buffer | Buffer[], observe?: (value: RespValue) => void): void {
    const link = this.principal.link(this.state.protocol);
    if (typeof link === 'string') {
      this.reply(errorReply(link));
      return;
    }
    if (!this.principal.forward(link, raw, observe)) this.upstreamFull(link);
    this.checkPipeline();
  }

  private send(command: Buffer, e: Expectation): void {
    const link = this.principal.link(this.state.protocol);
    if (typeof link === 'string') {
      if (e.kind === 'capture') e.resolve({ type: 'error', value: link });
      else if (e.kind === 'slot' || e.kind === 'replace') this.queue.fill(e.slot, errorReply(link));
      return;
    }
    if (!this.principal.send(link, command, e)) this.upstreamFull(link);
  }

  private upstreamFull(link: PrincipalLink): void {
    if (this.paused & UPSTREAM_WRITE) return;
    this.pause(UPSTREAM_WRITE);
    link.whenDrained(() => this.unpause(UPSTREAM_WRITE));
  }

  /**
   * Runs a command on the agent, on this connection's pipeline to it (order kept); `raw`, when
   * given, is the command as the client sent it (multibulk), passed on unchanged.
   */
  private agentCall(agent: string, args: Buffer[], raw?: Buffer | Buffer[]): Promise<AgentReply> {
    const tracer = this.ctx.tracer;
    if (!tracer) return this.agents.call(agent, this.state.protocol, args, raw);
    const span = startRedisCommandSpan(tracer, 'proxy', args[0]!, { agent });
    return this.agents.call(agent, this.state.protocol, args, raw).then((reply) => {
      // A Redis error reply is the agent's answer; `failed` is ours (not connected, timed out).
      endRedisCommandSpan(span, reply.failed ? 'agent_unavailable' : undefined);
      return reply;
    });
  }

  private split(cmd: RespCommand, all: Buffer[], route: SplitRoute): void {
    const slot = this.queue.defer(1);
    this.checkPipeline();
    const protocol = this.state.protocol;
    void runSplit(route, all[0]!, cmd.args, {
      agent: (agent, args) => this.agentCall(agent, args).then((r) => r.value),
      principal: (command) =>
        new Promise((resolve) => this.send(command, { kind: 'capture', owner: this.principal, resolve })),
    }).then((value) => {
      if (this.closed) return;
      this.queue.fill(slot, encode(value, { protocol }));
      this.flush();
    });
    this.checkInput();
  }

  // ---- connection state ----

  reset(): void {
    this.pubsub.clear();
    this.tx.abandon();
    this.state.protocol = 2;
    this.state.name = undefined;
    this.state.authenticated = this.ctx.password === undefined;
    this.authenticationChanged();
    this.db = 0;
    const own = this.principal.own;
    if (own) {
      own.internal(['RESET'], 'RESET');
      if (this.ctx.principal.password) own.internal(['AUTH', this.ctx.principal.password], 'AUTH');
    }
    this.reply(simpleString('RESET'));
  }

  subscribe(kind: PubSubKind, name: string, names: Buffer[]): void {
    if (names.length === 0) {
      this.reply(errorReply(ReplyText.arity(name)));
      return;
    }
    const result = this.pubsub.subscribe(kind, names, this.state.protocol);
    if (typeof result === 'string') {
      this.reply(errorReply(result));
      return;
    }
    // Confirm once the subscriptions are live, so a PUBLISH right after the confirmation is
    // delivered; an agent that takes too long gets it anyway and is retried behind the scenes.
    const slot = this.queue.defer(1);
    let done = false;
    const confirm = () => {
      if (done || this.closed) return;
      done = true;
      clearTimeout(timer);
      this.queue.fill(slot, result.replies);
      this.flush();
    };
    const timer = setTimeout(confirm, this.ctx.subscribeTimeoutMs);
    void result.live.then(confirm, confirm);
  }

  private deliver(message: PubSubMessage): void {
    if (this.closed) return;
    this.queue.ready(PubSubSession.frame(message, this.state.protocol));
    if (this.socket.writableLength > this.ctx.limits.maxPubSubOutputBytes) {
      // Redis' client-output-buffer-limit for pubsub: a subscriber that does not read is dropped.
      this.ctx.metrics.limitHit('pubsub_output');
      this.ctx.logger.warn({ client: this.state.id }, 'pub/sub client does not read; closing');
      this.socket.destroy();
      return;
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  // ---- output and flow control ----

  reply(bytes: Buffer): void {
    this.queue.ready(bytes);
  }

  private flush(): void {
    // Destroyed but not yet closed: a reply arriving meanwhile has nowhere to go.
    if (this.closed || this.socket.destroyed) return;
    this.queue.drain();
    this.queue.flush();
    const unsent = this.socket.writableLength + this.queue.waitingBytes;
    if (unsent > this.ctx.limits.maxOutputBytes) {
      this.ctx.metrics.limitHit('client_output');
      this.ctx.logger.warn({ client: this.state.id }, 'client does not read its replies; closing');
      this.socket.destroy();
      return;
    }
    if (!this.replies.set(unsent)) {
      // The replies are owed but the process has no room for them: this client loses its
      // connection rather than every client losing the process.
      this.ctx.metrics.limitHit('buffer_budget');
      this.ctx.logger.warn(
        { client: this.state.id, bytes: unsent },
        'replies do not fit the buffer budget (--max-buffered-bytes); closing',
      );
      this.socket.destroy();
      return;
    }
    this.checkInput();
    if (this.paused & PIPELINE && this.queue.outstanding <= this.ctx.limits.maxPendingReplies / 2)
      this.unpause(PIPELINE);
    if (this.closing && !this.ended && !this.held && this.queue.idle) {
      this.ended = true;
      this.socket.end();
      // What the client still sends is read and dropped, uncopied: a paused socket reads
      // nothing, so its FIN would go unseen and the connection hold its slot until the timer.
      this.reads.discard();
      this.socket.resume();
      setTimeout(() => this.socket.destroy(), this.ctx.limits.closeGraceMs).unref();
    }
  }

  private write(chunks: Buffer[], bytes: number): void {
    if (this.closed || this.socket.destroyed) return;
    let ok = true;
    if (chunks.length === 1) ok = this.socket.write(chunks[0]!);
    else if (bytes <= 64 * 1024) ok = this.socket.write(Buffer.concat(chunks, bytes));
    else {
      this.socket.cork();
      for (const c of chunks) ok = this.socket.write(c);
      this.socket.uncork();
    }
    if (!ok) this.pause(CLIENT_WRITE);
  }

  /** Stops reading while the connection holds more request bytes than it may (agent queues full). */
  private checkInput(): void {
    if (this.closed) return;
    this.input.refresh();
    if (this.input.full) this.pause(INPUT);
    else if (this.paused & INPUT) this.unpause(INPUT);
  }

  private checkPipeline(): void {
    if (this.queue.outstanding >= this.ctx.limits.maxPendingReplies) this.pause(PIPELINE);
  }

  private pause(reason: number): void {
    if (this.paused & reason) return;
    if (this.paused === 0) this.socket.pause();
    this.paused |= reason;
    if (reason === CLIENT_WRITE) {
      // Replies stop being read too: backpressure reaches the principal Redis through TCP,
      // and the agents through the tunnel's flow control.
      this.principal.own?.pause();
      this.agents.pause();
      this.socket.once('drain', () => {
        this.unpause(CLIENT_WRITE);
        // What was unsent is written now; the budget gets it back.
        this.flush();
      });
    }
  }

  private unpause(reason: number): void {
    if (!(this.paused & reason)) return;
    this.paused &= ~reason;
    if (reason === CLIENT_WRITE) {
      this.principal.own?.resume();
      this.agents.resume();
    }
    if (this.paused === 0 && !this.closing && !this.closed) this.socket.resume();
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.authTimer);
    this.principal.close();
    this.pubsub.clear();
    this.agents.close();
    this.input.release();
    this.replies.release();
    this.onClose(this);
  }
}

function byteLength(raw: Buffer | Buffer[]): number {
  if (!Array.isArray(raw)) return raw.length;
  let n = 0;
  for (const b of raw) n += b.length;
  return n;
}
