import type { Span } from '@opentelemetry/api';
import {
  acceptedFrame,
  dataFrame,
  endFrame,
  type Frame,
  type Open,
  ProtocolVersion,
  resetFrame,
  windowUpdateFrame,
  withStreamId,
} from '@pullplane/proto';
import { Attr } from '@pullplane/tracing';
import {
  type Multiplexer,
  relayedResetCode,
  type StreamEntry,
  TunnelError,
  TunnelErrorCode,
  type ViolationKind,
  type WindowBudget,
} from '@pullplane/tunnel';
import type { RelayCreditQueue } from './relay-credit.js';

export interface StreamRelayOptions {
  /** The proxy link's multiplexer and the agent tunnel's. */
  link: Multiplexer;
  tunnel: Multiplexer;
  /**
   * The agent's share, whose parent is the whole process's budget. `reserved` counts what the
   * relay holds for the agent's streams: each open direction its initial window, or more while
   * the credit passed on to its sender and its bytes not yet written take more; an ended
   * direction its bytes not yet written. `outstanding` counts the bytes not yet written alone.
   */
  budget: WindowBudget;
  /** Where a stream holding back credit waits for room in the budgets (one per process). */
  credit: RelayCreditQueue;
  span?: Span | undefined;
  /** A stream was reset because it would have taken the agent's share or the process past its limit. */
  onBudgetExceeded?: (scope: 'agent' | 'process') => void;
  onDone: (relay: StreamRelay, err: TunnelError | undefined) => void;
}

const EMPTY = new Uint8Array(0);

/** One direction of a relayed stream, as its sender sees it. */
interface Direction {
  /** Bytes the sender may still send: the credit the relay passed on, less what it sent. */
  credit: number;
  /** Credit the receiver granted that the relay has not passed on yet. */
  withheld: number;
  /** Bytes of this direction relayed and not yet written by the transport. */
  queued: number;
  /** What it holds of the budgets: the larger of the initial window and credit plus queued. */
  held: number;
  /** The sender ended it (or the stream is done): its credit is no longer needed. */
  ended: boolean;
}

function payload(f: Frame): number {
  const k = f.kind;
  if (k.case === 'data') return k.value.chunk.byteLength;
  if (k.case === 'responseHead' || k.case === 'open') return k.value.body.byteLength;
  return 0;
}

/**
 * One logical stream passed between a proxy link and an agent tunnel without terminating it:
 * frames keep their payload buffers and only change stream id. Credit is end to end (the
 * proxy's and the agent's streams grant it to each other), but the relay passes a grant on only
 * as far as the agent's share and the process's relay budget have room for it, holding back the
 * rest until the transports have written what they hold: a sender that keeps to its credit is
 * slowed, never reset, and what it can put in the gateway stays within the share. Each side is
 * checked against the credit the relay actually gave it.
 *
 * The relay registry is the two multiplexers' own stream tables: the relay claims the proxy's
 * id on the link and a new id on the tunnel, with an entry (a light StreamEntry, no Duplex) on
 * each side, so a frame costs one lookup and concurrency caps, GoAway and `close` apply to
 * relayed streams as to any other.
 */
export class StreamRelay {
  readonly proxyId: number;
  readonly agentId: number;
  private requestEnded: boolean;
  private responseEnded = false;
  /** The proxy's sending (its credit granted by the agent) and the agent's. */
  private readonly request: Direction;
  private readonly response: Direction;
  /** Both sides' streams start with this much credit, implied by the Open. */
  private readonly window: number;
  /** Offered room by the credit queue: passes on what it can, says whether it holds more back. */
  private readonly waiter = (): boolean => this.pass();
  private headRelayed = false;
  private done = false;
  private readonly unfold: boolean;
  /** The stream's entry in the link's table: the proxy's frames. */
  private readonly proxyEnd: StreamEntry = {
    receive: (f) => this.fromProxy(f),
    abort: (err, cause) =>
      cause === 'violation'
        ? this.fail(err)
        : this.fail(
            new TunnelError(TunnelErrorCode.CANCELLED, `requester went away: ${err.message}`),
            'agent',
          ),
  };
  /** The stream's entry in the tunnel's table: the agent's frames. */
  private readonly agentEnd: StreamEntry = {
    receive: (f) => this.fromAgent(f),
    abort: (err, cause) => (cause === 'violation' ? this.fail(err) : this.fail(err, 'proxy')),
  };

  /** Registers the stream in both multiplexers and sends the Open on; throws a TunnelError when the tunnel cannot take it. */
  constructor(
    open: Open,
    private readonly opts: StreamRelayOptions,
  ) {
    this.proxyId = open.streamId;
    const window = opts.tunnel.initialWindow;
    this.window = window;
    this.request = {
      credit: window - open.body.byteLength,
      withheld: 0,
      queued: 0,
      held: 0,
      ended: !open.hasBody,
    };
    this.response = { credit: window, withheld: 0, queued: 0, held: 0, ended: false };
    this.requestEnded = !open.hasBody;
    // A v1 agent takes neither inline bodies nor end-of-stream flags: they follow as Data and End.
    this.unfold = opts.tunnel.protocolVersion < ProtocolVersion.PROTOCOL_VERSION_2;
    if (this.request.credit < 0)
      throw new TunnelError(TunnelErrorCode.FLOW_CONTROL, 'inline body larger than the stream window');
    const head: Open = { ...open, agent: '' };
    const inline = head.body;
    if (this.unfold && (inline.byteLength > 0 || !open.hasBody)) {
      head.body = EMPTY;
      head.hasBody = true;
    }
    // The inline body waits in the tunnel's queue like any other payload: it is counted too.
    const counted = head.body.byteLength;
    if (counted > 0) this.reserve(counted);
    try {
      this.agentId = opts.tunnel.claim(this.agentEnd);
    } catch (err) {
      if (counted > 0) opts.budget.track(-counted);
      throw err;
    }
    // The windows the Open implies cannot be held back (an Open never waits: a stream that only
    // holds credit, like a watch, must not keep others out): they are held from here on.
    if (this.request.ended) this.request.credit = 0;
    this.request.queued = counted;
    this.settle(this.request);
    this.settle(this.response);
    const openFrame: Frame = {
      $typeName: 'pullplane.tunnel.v1.Frame',
      kind: { case: 'open', value: { ...head, streamId: this.agentId } },
    };
    opts.tunnel.send(openFrame, counted > 0 ? () => this.written(this.request, counted) : undefined);
    opts.link.claimPeerId(this.proxyId, this.proxyEnd);
    if (this.unfold) {
      if (inline.byteLength > 0) this.toAgent(dataFrame(this.agentId, inline));
      if (!open.hasBody) this.toAgent(endFrame(this.agentId));
    }
    if (open.hasBody) opts.link.send(acceptedFrame(this.proxyId));
  }

  private fromProxy(f: Frame): void {
    const k = f.kind;
    switch (k.case) {
      case 'data':
        if (!this.spend('request', k.value.chunk.byteLength)) return;
        this.toAgent(withStreamId(f, this.agentId));
        if (k.value.endStream) this.endRequest();
        break;
      case 'end':
        this.endRequest();
        this.toAgent(withStreamId(f, this.agentId));
        break;
      case 'windowUpdate':
        this.granted(this.response, k.value.increment);
        break;
      case 'reset':
        this.toAgent(withStreamId(f, this.agentId));
        this.finish(TunnelError.fromReset(k.value.code, k.value.message));
        return;
      default:
        this.fail(new TunnelError(TunnelErrorCode.PROTOCOL, `unexpected ${k.case} frame from the proxy`));
        return;
    }
    this.finishIfDone();
  }

  private fromAgent(f: Frame): void {
    const k = f.kind;
    if (this.responseEnded && (k.case === 'responseHead' || k.case === 'data' || k.case === 'end')) {
      this.agentBroke('after-end', `the agent sent ${k.case} after the end of its response`);
      return;
    }
    switch (k.case) {
      case 'responseHead':
        if (this.headRelayed) {
          this.agentBroke('unexpected-frame', 'the agent sent a second response head');
          return;
        }
        if (!this.spend('response', k.value.body.byteLength)) return;
        this.headRelayed = true;
        this.opts.span?.setAttribute(Attr.httpStatus, k.value.status);
        this.toProxy(withStreamId(f, this.proxyId));
        if (k.value.endStream) this.endResponse();
        break;
      case 'data':
        if (!this.spend('response', k.value.chunk.byteLength)) return;
        this.toProxy(withStreamId(f, this.proxyId));
        if (k.value.endStream) this.endResponse();
        break;
      case 'end':
        this.endResponse();
        this.toProxy(withStreamId(f, this.proxyId));
        break;
      case 'windowUpdate':
        this.granted(this.request, k.value.increment);
        break;
      case 'reset': {
        // Passed on through the reset table: a route refusal is the gateway's word alone (from an
        // agent it would make the proxy send the request again elsewhere).
        const code = relayedResetCode(k.value.code);
        this.toProxy(resetFrame(this.proxyId, code, k.value.message));
        this.finish(TunnelError.fromReset(code, k.value.message));
        return;
      }
      default:
        this.agentBroke('unexpected-frame', `the agent sent an unexpected ${k.case} frame`);
        return;
    }
    this.finishIfDone();
  }

  /** The agent broke the protocol on this stream: reset it on both sides and report it. */
  private agentBroke(kind: ViolationKind, message: string): void {
    this.fail(
      new TunnelError(
        kind === 'flow-control' ? TunnelErrorCode.FLOW_CONTROL : TunnelErrorCode.PROTOCOL,
        message,
      ),
    );
    this.opts.tunnel.reportViolation({ kind, streamId: this.agentId, message });
  }

  /**
   * Takes `bytes` of the credit the relay gave a side; a side that overspends is reset. What it
   * spent stays committed, now as bytes queued for the other side's transport.
   */
  private spend(side: 'request' | 'response', bytes: number): boolean {
    const dir = side === 'request' ? this.request : this.response;
    const left = dir.credit;
    if (bytes > left) {
      const message = `the ${side === 'request' ? 'proxy' : 'agent'} sent ${bytes} bytes with only ${left} bytes of credit`;
      if (side === 'response') this.agentBroke('flow-control', message);
      else this.fail(new TunnelError(TunnelErrorCode.FLOW_CONTROL, message));
      return false;
    }
    dir.credit -= bytes;
    return true;
  }

  private endRequest(): void {
    this.requestEnded = true;
    this.endDirection(this.request);
  }

  private endResponse(): void {
    this.responseEnded = true;
    this.endDirection(this.response);
  }

  /** A sender that ended needs no more credit: what it held beyond its queued bytes goes back. */
  private endDirection(dir: Direction): void {
    if (dir.ended) return;
    dir.ended = true;
    dir.withheld = 0;
    dir.credit = 0;
    this.settle(dir);
  }

  /**
   * Brings what `dir` holds of the budgets to what it needs: while open, its initial window or
   * its credit plus queued bytes, whichever is larger; once ended, its queued bytes.
   */
  private settle(dir: Direction): void {
    const need = dir.ended ? dir.queued : Math.max(this.window, dir.credit + dir.queued);
    const change = need - dir.held;
    dir.held = need;
    if (change > 0) this.opts.budget.reserve(change);
    else if (change < 0) {
      this.opts.budget.release(-change);
      this.opts.credit.freed();
    }
  }

  /** The receiver of `dir` granted `increment` more: passed on as far as the budgets allow. */
  private granted(dir: Direction, increment: number): void {
    if (dir.ended || increment <= 0) return;
    dir.withheld += increment;
    if (this.pass()) this.opts.credit.wait(this.waiter);
  }

  /**
   * Passes on withheld credit, in each direction, as far as there is room for it: within what
   * the direction holds already (its initial window, which every open stream keeps, so a budget
   * full of other streams' windows, say idle watches', slows a stream to a window per round trip,
   * never to a halt), and beyond that within what the agent's share and the process's budget
   * have left. Less than a quarter window (or all that is withheld) waits for more room: small
   * grants make small frames. Returns whether credit is still held back.
   */
  private pass(): boolean {
    if (this.done) return false;
    let holding = false;
    for (const dir of [this.request, this.response]) {
      if (dir.ended || dir.withheld === 0) continue;
      const room = dir.held - dir.credit - dir.queued + this.opts.budget.room;
      const give = Math.min(dir.withheld, room);
      if (give <= 0 || give < Math.min(dir.withheld, this.window / 4)) {
        holding = true;
        continue;
      }
      dir.credit += give;
      dir.withheld -= give;
      this.settle(dir);
      if (dir === this.request) this.toProxy(windowUpdateFrame(this.proxyId, give));
      else this.toAgent(windowUpdateFrame(this.agentId, give));
      if (dir.withheld > 0) holding = true;
    }
    return holding;
  }

  /** The transport wrote `bytes` of `dir` (or dropped them): they leave both counts. */
  private written(dir: Direction, bytes: number): void {
    dir.queued -= bytes;
    this.opts.budget.track(-bytes);
    this.settle(dir);
    // The bytes written leave room within what this stream holds (its initial window) even when
    // no budget changed, so no other stream frees anything: credit held back for want of that
    // room goes now. Waiting for the queue's next offer instead stalled every stream of an agent
    // whose share was full and whose streams all stayed open (Redis pipelines), each holding
    // back the credit its sender waited for, until a request timed out.
    if (dir.withheld > 0 && !this.done) {
      if (this.pass()) this.opts.credit.wait(this.waiter);
      else this.opts.credit.forget(this.waiter);
    }
  }

  private toAgent(f: Frame): void {
    if (this.unfold) {
      const k = f.kind;
      if (k.case === 'data' && k.value.endStream) {
        this.send(this.opts.tunnel, dataFrame(this.agentId, k.value.chunk), this.request);
        this.send(this.opts.tunnel, endFrame(this.agentId), this.request);
        return;
      }
    }
    this.send(this.opts.tunnel, f, this.request);
  }

  private toProxy(f: Frame): void {
    this.send(this.opts.link, f, this.response);
  }

  /**
   * Payload (of `dir`, whose sender spent credit on it) stays counted until the transport has
   * written it, whatever becomes of the stream meanwhile (a reset stream's bytes still sit in the
   * queue). The credit the relay passes on keeps it within the agent's share; only the windows
   * of many streams opened at once can take it further, and then what would exceed the share
   * or the process's budget costs this stream alone.
   */
  private send(to: Multiplexer, f: Frame, dir: Direction): void {
    const bytes = payload(f);
    // Spent credit that is not sent after all (the stream is done) no longer needs holding.
    if (this.done) {
      if (bytes > 0) this.settle(dir);
      return;
    }
    if (bytes === 0) {
      to.send(f);
      return;
    }
    try {
      this.reserve(bytes);
    } catch (err) {
      this.settle(dir);
      this.fail(err as TunnelError);
      return;
    }
    dir.queued += bytes;
    // Within what it held (the credit was spent on these bytes), but for a v1 agent's inline body.
    this.settle(dir);
    to.send(f, () => this.written(dir, bytes));
  }

  /** Counts `bytes` as queued in the agent's share and the process; throws when either would overflow. */
  private reserve(bytes: number): void {
    const budget = this.opts.budget;
    const over = budget.wouldExceed(bytes);
    if (over) {
      this.opts.onBudgetExceeded?.(over === budget ? 'agent' : 'process');
      throw new TunnelError(
        TunnelErrorCode.UNAVAILABLE,
        over === budget
          ? `the agent's share of the gateway relay memory (${budget.limit} bytes) is exhausted`
          : `gateway relay memory budget of ${over.limit} bytes exhausted`,
      );
    }
    budget.track(bytes);
  }

  private finishIfDone(): void {
    if (this.requestEnded && this.responseEnded) this.finish(undefined);
  }

  /** Resets the stream on both sides (or only `only`, whose peer is already gone). */
  private fail(err: TunnelError, only?: 'proxy' | 'agent'): void {
    if (this.done) return;
    if (only !== 'agent') this.opts.link.send(resetFrame(this.proxyId, err.resetCode, err.message));
    if (only !== 'proxy') this.opts.tunnel.send(resetFrame(this.agentId, err.resetCode, err.message));
    this.finish(err);
  }

  private finish(err: TunnelError | undefined): void {
    if (this.done) return;
    this.done = true;
    this.opts.credit.forget(this.waiter);
    this.endDirection(this.request);
    this.endDirection(this.response);
    this.opts.link.release(this.proxyId, this.proxyEnd);
    this.opts.tunnel.release(this.agentId, this.agentEnd);
    this.opts.onDone(this, err);
  }
}
