import type { Span } from '@opentelemetry/api';
import {
  acceptedFrame,
  dataFrame,
  endFrame,
  type Frame,
  type Open,
  ProtocolVersion,
  resetFrame,
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

export interface StreamRelayOptions {
  /** The proxy link's multiplexer and the agent tunnel's. */
  link: Multiplexer;
  tunnel: Multiplexer;
  /**
   * Bytes of this agent's streams relayed and not yet written by either transport: the agent's
   * share, whose parent is the whole process's budget.
   */
  budget: WindowBudget;
  span?: Span | undefined;
  /** A stream was reset because it would have taken the agent's share or the process past its limit. */
  onBudgetExceeded?: (scope: 'agent' | 'process') => void;
  onDone: (relay: StreamRelay, err: TunnelError | undefined) => void;
}

const EMPTY = new Uint8Array(0);

function payload(f: Frame): number {
  const k = f.kind;
  if (k.case === 'data') return k.value.chunk.byteLength;
  if (k.case === 'responseHead' || k.case === 'open') return k.value.body.byteLength;
  return 0;
}

/**
 * One logical stream passed between a proxy link and an agent tunnel without terminating it:
 * frames keep their payload buffers and only change stream id. Credit is end to end (the
 * proxy's and the agent's streams grant it to each other); the relay checks that neither side
 * sends beyond it, and counts what sits in its transports' queues against the process budget.
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
  /** Bytes each side may still send: the other side's initial window plus its credit. */
  private requestCredit: number;
  private responseCredit: number;
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
    this.requestCredit = window - open.body.byteLength;
    this.responseCredit = window;
    this.requestEnded = !open.hasBody;
    // A v1 agent takes neither inline bodies nor end-of-stream flags: they follow as Data and End.
    this.unfold = opts.tunnel.protocolVersion < ProtocolVersion.PROTOCOL_VERSION_2;
    if (this.requestCredit < 0)
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
    this.agentId = opts.tunnel.claim(this.agentEnd);
    const openFrame: Frame = {
      $typeName: 'pullplane.tunnel.v1.Frame',
      kind: { case: 'open', value: { ...head, streamId: this.agentId } },
    };
    opts.tunnel.send(openFrame, counted > 0 ? () => opts.budget.track(-counted) : undefined);
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
        if (k.value.endStream) this.requestEnded = true;
        break;
      case 'end':
        this.requestEnded = true;
        this.toAgent(withStreamId(f, this.agentId));
        break;
      case 'windowUpdate':
        this.responseCredit += k.value.increment;
        this.toAgent(withStreamId(f, this.agentId));
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
        if (k.value.endStream) this.responseEnded = true;
        break;
      case 'data':
        if (!this.spend('response', k.value.chunk.byteLength)) return;
        this.toProxy(withStreamId(f, this.proxyId));
        if (k.value.endStream) this.responseEnded = true;
        break;
      case 'end':
        this.responseEnded = true;
        this.toProxy(withStreamId(f, this.proxyId));
        break;
      case 'windowUpdate':
        this.requestCredit += k.value.increment;
        this.toProxy(withStreamId(f, this.proxyId));
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

  /** Takes `bytes` of a side's credit; a side that overspends is reset. */
  private spend(side: 'request' | 'response', bytes: number): boolean {
    const left = side === 'request' ? this.requestCredit : this.responseCredit;
    if (bytes > left) {
      const message = `the ${side === 'request' ? 'proxy' : 'agent'} sent ${bytes} bytes with only ${left} bytes of credit`;
      if (side === 'response') this.agentBroke('flow-control', message);
      else this.fail(new TunnelError(TunnelErrorCode.FLOW_CONTROL, message));
      return false;
    }
    if (side === 'request') this.requestCredit -= bytes;
    else this.responseCredit -= bytes;
    return true;
  }

  private toAgent(f: Frame): void {
    if (this.unfold) {
      const k = f.kind;
      if (k.case === 'data' && k.value.endStream) {
        this.send(this.opts.tunnel, dataFrame(this.agentId, k.value.chunk));
        this.send(this.opts.tunnel, endFrame(this.agentId));
        return;
      }
    }
    this.send(this.opts.tunnel, f);
  }

  private toProxy(f: Frame): void {
    this.send(this.opts.link, f);
  }

  /**
   * Payload stays counted until the transport has written it, whatever becomes of the stream
   * meanwhile (a reset stream's bytes still sit in the queue). Credit bounds it per stream; an
   * agent that grants credit and does not read its tunnel fills its own share, never the whole
   * process's budget, and what would exceed either costs this stream alone.
   */
  private send(to: Multiplexer, f: Frame): void {
    if (this.done) return;
    const bytes = payload(f);
    if (bytes === 0) {
      to.send(f);
      return;
    }
    try {
      this.reserve(bytes);
    } catch (err) {
      this.fail(err as TunnelError);
      return;
    }
    const budget = this.opts.budget;
    to.send(f, () => budget.track(-bytes));
  }

  /** Counts `bytes` against the agent's share and the process; throws when either would overflow. */
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
    if (only !== 'agent') this.toProxy(resetFrame(this.proxyId, err.resetCode, err.message));
    if (only !== 'proxy') this.send(this.opts.tunnel, resetFrame(this.agentId, err.resetCode, err.message));
    this.finish(err);
  }

  private finish(err: TunnelError | undefined): void {
    if (this.done) return;
    this.done = true;
    this.opts.link.release(this.proxyId, this.proxyEnd);
    this.opts.tunnel.release(this.agentId, this.agentEnd);
    this.opts.onDone(this, err);
  }
}
