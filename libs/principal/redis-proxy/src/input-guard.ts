import type { RespDecoderLimitValues, RespError } from '@pullplane/resp';
import { type BufferBudget, BufferShare } from './buffer-budget.js';
import type { LimitName, ProxyLimits } from './proxy-context.js';

/**
 * Roughly what V8 spends on one argument (a Buffer view and its array slot) beyond its bytes.
 * Counted against the process-wide budget so a command of many tiny arguments is charged
 * for the memory it really takes, not for its few bytes on the wire.
 */
const ARGUMENT_COST = 96;

/**
 * One connection's request side: which decoder limits apply (tight until AUTH), what its
 * command in progress, held commands and agent queues hold, and the one answer given when a
 * limit refuses a command. The decoder asks `admit` before it keeps any part of a command
 * beyond the chunk being read, with the size the command's headers announced, so a command
 * that will not fit the process-wide budget is refused before its payload is read. What the
 * connection holds beyond that command stops it being read (`full`) until it moves on.
 */
export class InputGuard {
  private readonly share: BufferShare;
  /** Bytes the command being received announced so far, and what it is charged for them. */
  private admitted = 0;
  private charge = 0;
  /** Bytes of complete commands waiting for their turn. */
  private held = 0;
  private refusedBy: 'client_input' | 'buffer_budget' | undefined;

  constructor(
    private readonly limits: ProxyLimits,
    private readonly budget: BufferBudget,
    /** Bytes of this connection's commands queued toward agents and not yet taken by the tunnel. */
    private readonly queued: () => number,
  ) {
    this.share = new BufferShare(budget, 'request');
  }

  /** Request bytes this connection holds now. */
  get bytes(): number {
    return this.admitted + this.held + this.queued();
  }

  /** Above the per-connection limit: stop reading until commands move on. */
  get full(): boolean {
    return this.bytes > this.limits.maxClientInputBytes;
  }

  decoderLimits(authenticated: boolean): RespDecoderLimitValues {
    const l = this.limits;
    if (!authenticated) {
      return {
        maxArrayLength: l.maxUnauthenticatedArgs,
        maxCommandBytes: l.maxUnauthenticatedBytes,
        maxBulkLength: Math.min(l.maxBulkLength, l.maxUnauthenticatedBytes),
        maxInlineLength: Math.min(l.maxInlineLength, l.maxUnauthenticatedBytes),
      };
    }
    return {
      maxArrayLength: l.maxCommandArgs,
      maxCommandBytes: l.maxCommandBytes,
      maxBulkLength: l.maxBulkLength,
      maxInlineLength: l.maxInlineLength,
    };
  }

  /** The decoder's admit hook: may the command in progress grow to `bytes` (and `args` arguments)? */
  admit(bytes: number, args: number): boolean {
    if (bytes <= this.admitted) return true;
    // What the connection already holds is governed by pausing it (see `full`); only a
    // command that could never fit is refused.
    if (bytes > this.limits.maxClientInputBytes) {
      this.refusedBy = 'client_input';
      return false;
    }
    const charge = bytes + args * ARGUMENT_COST;
    if (!this.share.set(this.held + this.queued() + charge)) {
      this.refusedBy = 'buffer_budget';
      return false;
    }
    this.admitted = bytes;
    this.charge = charge;
    return true;
  }

  /** The command in progress is complete (or abandoned): its bytes move on with it. */
  commandDone(): void {
    if (this.admitted === 0) return;
    this.admitted = 0;
    this.charge = 0;
    this.refresh();
  }

  hold(bytes: number): void {
    this.held += bytes;
    this.refresh();
  }

  unhold(bytes: number): void {
    this.held -= bytes;
    this.refresh();
  }

  /**
   * Brings the connection's share of the budget up to date (agent queues grow and shrink on
   * their own). Commands already accepted are counted even past the budget: it refuses new
   * ones, it never drops what it let in.
   */
  refresh(): void {
    this.share.force(this.held + this.queued() + this.charge);
  }

  release(): void {
    this.admitted = 0;
    this.charge = 0;
    this.held = 0;
    this.share.release();
  }

  /**
   * The reply to a decoder failure and the limit behind it, if any. Limits name their flag so
   * an operator reading a client's error knows what to change; before AUTH they keep Redis'
   * wording for unauthenticated clients.
   */
  describe(err: RespError, authenticated: boolean): { reply: string; limit: LimitName | undefined } {
    const l = this.limits;
    if (err.limit === undefined) return { reply: `ERR ${err.message}`, limit: undefined };
    if (err.limit === 'admit') {
      return this.refusedBy === 'client_input'
        ? {
            reply: `ERR command refused: it is larger than the ${l.maxClientInputBytes} request bytes a connection may hold (--max-client-input-bytes)`,
            limit: 'client_input',
          }
        : {
            reply: `ERR command refused: the proxy's buffers for all clients are full (${this.budget.max} bytes, --max-buffered-bytes)`,
            limit: 'buffer_budget',
          };
    }
    if (!authenticated) {
      return err.limit === 'maxArrayLength'
        ? {
            reply: `ERR Protocol error: unauthenticated multibulk length (at most ${l.maxUnauthenticatedArgs} arguments before AUTH, --max-unauthenticated-args)`,
            limit: 'unauthenticated_args',
          }
        : {
            reply: `ERR Protocol error: unauthenticated bulk length (at most ${l.maxUnauthenticatedBytes} bytes before AUTH, --max-unauthenticated-bytes)`,
            limit: 'unauthenticated_bytes',
          };
    }
    switch (err.limit) {
      case 'maxArrayLength':
        return {
          reply: `ERR Protocol error: invalid multibulk length (at most ${l.maxCommandArgs} arguments, --max-command-args)`,
          limit: 'command_args',
        };
      case 'maxBulkLength':
        return {
          reply: `ERR Protocol error: invalid bulk length (at most ${l.maxBulkLength} bytes, --max-bulk-length)`,
          limit: 'bulk_length',
        };
      case 'maxCommandBytes':
        return {
          reply: `ERR Protocol error: command too large (at most ${l.maxCommandBytes} bytes, --max-command-bytes)`,
          limit: 'command_bytes',
        };
      default:
        return { reply: `ERR ${err.message}`, limit: 'inline_length' };
    }
  }
}
