import type { IncomingMessage } from 'node:http';
import type { ForwardedHeader } from './forwarded-headers.js';
import type { FailureNames } from './front-failures.js';
import type { Answer, Failure } from './status-answer.js';
import type { OpenHead } from './stream-opener.js';

/** What every proxy works out about a request it accepts: the agent, and what let the caller in. */
export interface FrontTarget {
  agent: string;
  /** The caller token's `jti` (when a token let it in): its revocation ends the exchange. */
  jti?: string | undefined;
}

/** A proxy's verdict on a request: where it goes and with which headers, or why not. */
export type Acceptance<T extends FrontTarget, N extends string> =
  | { ok: true; target: T; headers: ForwardedHeader[] }
  /** `target`: what was worked out before the refusal (for metrics and the audit line). */
  | { ok: false; failure: Failure<N>; target?: Partial<T> | undefined };

/** How one exchange ended, for the proxy's metrics and audit line (the front ends the span). */
export interface ExchangeReport<T extends FrontTarget> {
  req: IncomingMessage;
  requestId: string;
  /** What acceptance worked out; partial for some refusals, absent for others. */
  target: Partial<T> | undefined;
  /** The caller was accepted (authenticated and allowed this agent). */
  accepted: boolean;
  /** The status the caller got (the agent's, once its head went out). */
  status: number;
  /** Why it failed: a catalog name, `MID_BODY` (cut after the head) or `UPGRADED_STREAM`. */
  failure?: string | undefined;
  /** What went wrong, for the log line. */
  error?: string | undefined;
  /** The failure is the caller going away, not the agent's or ours. */
  cancelled?: boolean | undefined;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** An upgrade: the protocol asked for (`true` when refused before it was looked at). */
  upgrade?: string | true | undefined;
  /** The server span's ids, when traced. */
  trace?: { trace_id: string; span_id: string } | undefined;
}

/**
 * What one proxy adds to the front: how the caller and the agent are chosen, which headers go
 * on and come back, what its errors are called, and how it counts and audits. Everything else
 * (server, body limit, deadline, revocation, framing, span, answers) is the front's.
 */
export interface ProxyRoute<T extends FrontTarget, N extends string> {
  /** The `proxy` label of the shared metrics. */
  readonly proxy: string;
  /** The proxy's names for the failures the front detects. */
  readonly failures: FailureNames<N>;
  /** The answer for a failure (a Status body, and e.g. `Allow` on a 405). */
  answer(failure: Failure<N>): Answer;
  /** A refusal before any credential is looked at (e.g. a method never forwarded). */
  screen?(req: IncomingMessage): Failure<N> | undefined;
  /** For an `Upgrade` request: a refusal, or undefined to forward it (as `accept` then `open`). */
  screenUpgrade(req: IncomingMessage): Failure<N> | undefined;
  /** Who asks, for which agent, with which headers; or why not. */
  accept(req: IncomingMessage): Promise<Acceptance<T, N>>;
  /** A refusal of an accepted caller's request (its span is already under the caller's trace). */
  admit?(req: IncomingMessage, target: T): Failure<N> | undefined;
  /** What the agent is asked; `upgrade` is the protocol asked for ('' for none). */
  head(req: IncomingMessage, target: T, headers: ForwardedHeader[], upgrade: string): OpenHead;
  /**
   * Whether the deadline bounds the whole answer, body included, as the Kubernetes API server's
   * request timeout does for requests that are not long-running; otherwise (a watch, a followed
   * log, an extension's download) only its head.
   */
  deadlineCoversBody(target: T): boolean;
  /** Send the response head at once when no body came with it (watches, event streams). */
  flushHead(target: T): boolean;
  /** Whether an agent's response header (lower-case name) stays behind. */
  stripResponse(lower: string): boolean;
  /** Fields naming the exchange in the front's own log lines (e.g. the caller, the extension). */
  describe(target: T): Record<string, unknown>;
  /** The response head arrived, `seconds` after the request did. */
  headArrived(req: IncomingMessage, target: T, seconds: number): void;
  /** The exchange is over (called once). */
  finished(report: ExchangeReport<T>): void;
}
