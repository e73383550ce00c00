import { ReplyWaiters } from '@pullplane/redis-common';
import { encodeCommand, type RespProtocol, type RespValue, ValueSlicer } from '@pullplane/resp';
import { TunnelError, TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';
import { type AgentOpener, type AgentReply, agentReply, errorAsReply, tunnelFailure } from './agent-call.js';
import { ReplyText } from './errors.js';

export interface AgentPipelineOptions {
  opener: AgentOpener;
  agent: string;
  protocol: RespProtocol;
  /** A reply that takes longer than this fails the pipeline (and every command still in it). */
  timeoutMs: number;
  maxReplyBytes: number;
  onClosed: (pipeline: AgentPipeline) => void;
  /** Commands queued toward the agent were taken by the tunnel (see queuedBytes). */
  onDrain?: () => void;
}

interface Waiter {
  resolve: (reply: AgentReply) => void;
  sentAt: number;
}

/**
 * One client connection's commands for one agent, on one long-lived logical stream: commands
 * go out as RESP in the request body, the agent runs them in order on one connection to its
 * Redis and answers in the same order. Order per client connection holds without a stream
 * (and a gateway round trip to set it up) per command. Replies are checked to be exactly one
 * value each and never a push, so an agent can never slip extra replies into a client's stream.
 */
export class AgentPipeline {
  private readonly stream: TunnelStream | undefined;
  private readonly waiting: ReplyWaiters<Waiter>;
  private failure: string | undefined;
  private slicer: ValueSlicer | undefined;

  constructor(private readonly opts: AgentPipelineOptions) {
    this.waiting = new ReplyWaiters(opts.timeoutMs, () =>
      this.fail(ReplyText.timeout(opts.agent, opts.timeoutMs)),
    );
    try {
      this.stream = opts.opener.open(opts.agent, {
        head: { case: 'redis', value: { args: [], respVersion: opts.protocol, pipeline: true } },
        hasBody: true,
      });
    } catch (err) {
      this.failure = tunnelFailure(opts.agent, err);
      return;
    }
    const stream = this.stream;
    const slicer = new ValueSlicer({
      maxBulkLength: opts.maxReplyBytes,
      // Replies are passed on as their bytes: a large one is never joined, here or below.
      joinSplitBulks: false,
      onValue: (v, raw) => this.onReply(v, raw),
      // Over a limit (a bulk past the reply cap) says so; anything else is malformed.
      onError: (err) =>
        this.fail(
          err.limit === undefined
            ? ReplyText.badAgentReply(opts.agent)
            : ReplyText.replyTooLarge(opts.agent, opts.maxReplyBytes),
        ),
    });
    stream.responseHead().then(
      (head) => {
        if (head.status !== 200) this.fail(ReplyText.agentFailed(opts.agent, `status ${head.status}`));
      },
      () => undefined,
    );
    this.slicer = slicer;
    stream.on('data', (chunk: Buffer) => slicer.push(chunk));
    stream.on('drain', () => opts.onDrain?.());
    stream.on('end', () => this.fail(ReplyText.agentFailed(opts.agent, 'the agent ended the pipeline')));
    stream.on('close', () =>
      this.fail(
        tunnelFailure(
          opts.agent,
          stream.errored ?? new TunnelError(TunnelErrorCode.CANCELLED, 'the pipeline stream closed'),
        ),
      ),
    );
  }

  get closed(): boolean {
    return this.failure !== undefined;
  }

  /** Command bytes written but not yet taken by the tunnel (it takes them as the agent grants credit). */
  get queuedBytes(): number {
    return this.failure === undefined ? (this.stream?.writableLength ?? 0) : 0;
  }

  /**
   * Sends one command; resolves with its reply, or an error reply (never rejects). `raw` is the
   * command's multibulk bytes when the caller has them (as the client sent them): passed on
   * as they are instead of encoded again.
   */
  call(args: Buffer[], raw?: Buffer | Buffer[]): Promise<AgentReply> {
    if (this.failure !== undefined) return Promise.resolve(errorAsReply(this.failure));
    return new Promise((resolve) => {
      this.waiting.push({ resolve, sentAt: Date.now() });
      const stream = this.stream!;
      if (raw === undefined) stream.write(encodeCommand(args));
      else if (Buffer.isBuffer(raw)) stream.write(raw);
      else for (const part of raw) stream.write(part);
    });
  }

  /** Stops reading replies (the client does not read its own). */
  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }

  /** Ends the stream; the agent stops at once. Commands still waiting get an error. */
  close(): void {
    this.fail(ReplyText.agentFailed(this.opts.agent, 'client went away'));
  }

  private onReply(v: RespValue, raw: Buffer | Buffer[]): void {
    if (v.type === 'push' || this.waiting.peek() === undefined) {
      this.fail(ReplyText.badAgentReply(this.opts.agent));
      return;
    }
    const waiter = this.waiting.shift()!;
    waiter.resolve(agentReply(v, raw));
  }

  private fail(message: string): void {
    if (this.failure !== undefined) return;
    this.failure = message;
    this.slicer?.stop();
    const waiting = this.waiting.drain();
    const reply = errorAsReply(message);
    for (const w of waiting) w.resolve(reply);
    this.stream?.destroy();
    this.opts.onClosed(this);
  }
}

/** A client connection's pipelines: one per agent (and protocol) it talks to. */
export class AgentPipelines {
  private readonly pipelines = new Map<string, AgentPipeline>();

  constructor(
    private readonly opts: Omit<AgentPipelineOptions, 'agent' | 'protocol' | 'onClosed'> & {
      /** Every reply: how long it took, for which agent and command, and whether the proxy answered it as a failure. */
      onReply: (seconds: number, agent: string, command: Buffer | undefined, failed: boolean) => void;
    },
  ) {}

  /** Command bytes of this client queued toward its agents. */
  get queuedBytes(): number {
    let n = 0;
    for (const p of this.pipelines.values()) n += p.queuedBytes;
    return n;
  }

  call(agent: string, protocol: RespProtocol, args: Buffer[], raw?: Buffer | Buffer[]): Promise<AgentReply> {
    const key = `${protocol}${agent}`;
    let pipeline = this.pipelines.get(key);
    if (pipeline === undefined) {
      const { onReply: _, ...common } = this.opts;
      pipeline = new AgentPipeline({
        ...common,
        agent,
        protocol,
        onClosed: (p) => {
          if (this.pipelines.get(key) === p) this.pipelines.delete(key);
          // Whatever it had queued is gone with it.
          this.opts.onDrain?.();
        },
      });
      // An agent that is not connected fails at once; the next command tries again.
      if (!pipeline.closed) this.pipelines.set(key, pipeline);
    }
    const started = performance.now();
    return pipeline.call(args, raw).then((reply) => {
      this.opts.onReply((performance.now() - started) / 1000, agent, args[0], reply.failed === true);
      return reply;
    });
  }

  pause(): void {
    for (const p of this.pipelines.values()) p.pause();
  }

  resume(): void {
    for (const p of this.pipelines.values()) p.resume();
  }

  /** Resets every stream, which releases the agents' side at once. */
  close(): void {
    for (const p of this.pipelines.values()) p.close();
    this.pipelines.clear();
  }
}
