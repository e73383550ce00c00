import { type Frame, type OpenMessageInit, openMessage } from '@pullplane/proto';
import {
  type AbortCause,
  DEFAULT_INITIAL_WINDOW,
  type Deadline,
  isRouteRefusal,
  LogicalStream,
  TunnelError,
  TunnelErrorCode,
  type WindowBudget,
} from '@pullplane/tunnel';

/** Where a stream was last sent, and until when it may be sent elsewhere. */
export interface Route {
  address: string;
  sessionId: string;
  /** The request's deadline: past it, the stream fails rather than look for its agent again. */
  deadline: Deadline;
  /** Times the Open was sent again after a link was lost under it. */
  resent: number;
}

/**
 * A stream that no gateway took: refused (`mayHaveReached` false: nothing was relayed), or whose
 * link was lost after its Open left (`mayHaveReached`: the agent may be serving it).
 */
export type UnroutedHandler = (stream: LinkStream, reason: TunnelError, mayHaveReached: boolean) => void;

const EMPTY = new Uint8Array(0);

/**
 * A request stream of a proxy link. It is made before it has a link; its Open (and what fits
 * of its body inline in it) is kept until anything comes back, and its body waits for the
 * gateway's Accepted. So while it has heard nothing, it can leave its link and be sent on
 * another: when the gateway refuses to route it (Reset NO_ROUTE), or its link is lost. Either
 * goes to the router's handler, which looks for the agent again.
 */
export class LinkStream extends LogicalStream {
  /** Where it was last sent (set by the router). */
  route: Route | undefined;
  /** The link it was last attached to (set by the link), probed when the stream's deadline passes unanswered. */
  link: { probe(timeoutMs: number): void } | undefined;
  /**
   * The bytes every link stream of the process may hold for readers together (set by the
   * router); data that would take them past it resets this stream alone.
   */
  ceiling: WindowBudget | undefined;
  /** Told when the ceiling reset this stream (a metric). */
  onOverCeiling: (() => void) | undefined;

  /** A body given in `init` is written like one written later: whatever fits goes inline in the Open. */
  constructor(
    init: OpenMessageInit,
    highWaterMark: number,
    private readonly unrouted: UnroutedHandler,
  ) {
    const open = openMessage(init, 0);
    const body = open.body;
    const ends = !open.hasBody;
    if (body.byteLength > 0) {
      open.body = EMPTY;
      open.hasBody = true;
    }
    super(undefined, 0, open, { initialWindow: DEFAULT_INITIAL_WINDOW, highWaterMark, initiator: true });
    if (body.byteLength > 0) this.write(body);
    if (ends) this.end();
  }

  /** A route refusal before any answer sends the stream elsewhere; anything else is the stream's. */
  override receive(f: Frame): void {
    const k = f.kind;
    if (k.case === 'reset' && isRouteRefusal(k.value.code) && this.unanswered) {
      this.detach();
      this.unrouted(this, TunnelError.fromReset(k.value.code, k.value.message), false);
      return;
    }
    super.receive(f);
  }

  protected override admit(bytes: number): boolean {
    const over = this.ceiling?.wouldExceed(bytes);
    if (!over) return true;
    this.onOverCeiling?.();
    this.reset(
      TunnelErrorCode.UNAVAILABLE,
      `the proxy's memory for responses on gateway links (${over.limit} bytes) is exhausted`,
    );
    return false;
  }

  /** A link lost under a stream that heard nothing back: the stream leaves it, to be sent again. */
  override abort(err: TunnelError, cause: AbortCause): void {
    if (cause === 'closed' && this.unanswered) {
      this.detach();
      this.linkLost(err, true);
      return;
    }
    super.abort(err, cause);
  }

  /**
   * The link this stream was on (`sent`) or waiting for is gone. The stream is sent elsewhere,
   * unless the gateway refused us, which no other attempt mends.
   */
  linkLost(reason: TunnelError, sent: boolean): void {
    if (reason.code === TunnelErrorCode.REFUSED) super.abort(reason, 'closed');
    else this.unrouted(this, reason, sent);
  }
}
