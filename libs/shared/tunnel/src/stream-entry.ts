import type { Frame } from '@pullplane/proto';
import type { TunnelError } from './errors.js';

/**
 * Why a stream cannot go on: its transport is gone (`closed`), one of its frames was too large
 * for any message and a Reset went in its place (`oversize`), or the peer broke the limits on it
 * (`violation`: reset it, on every side it spans).
 */
export type AbortCause = 'closed' | 'oversize' | 'violation';

/**
 * What a multiplexer's stream table holds for one stream id: a LogicalStream of its own, or an
 * entry another package owns for an id it claimed (`Multiplexer.claim`, `claimPeerId`), such as
 * the gateway's relay ends, which pass frames to another multiplexer as they are. The
 * multiplexer looks the id of each frame up once and hands the frame over; it never needs to
 * know what the entry is.
 */
export interface StreamEntry {
  /** A frame of this stream from the peer, checked against the peer limits. */
  receive(f: Frame): void;
  /**
   * The stream cannot go on. For `closed` and `oversize` the multiplexer has forgotten the
   * entry already; for `violation` the entry resets its stream and releases its id.
   */
  abort(err: TunnelError, cause: AbortCause): void;
}
