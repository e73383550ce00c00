import type { Tracer } from '@opentelemetry/api';
import type { ExchangeRevocation, OpenExchanges } from '@pullplane/auth';
import { type Deadline, TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { FrontTarget, ProxyRoute } from './proxy-route.js';
import type { StreamOpener } from './stream-opener.js';

/** What every exchange of one front shares. */
export interface FrontContext<T extends FrontTarget, N extends string> {
  route: ProxyRoute<T, N>;
  router: StreamOpener;
  logger: Logger;
  tracer: Tracer | undefined;
  openExchanges: OpenExchanges | undefined;
  /** Time allowed until the response head (or the 101) arrives. */
  requestTimeoutMs: number;
  maxRequestBodyBytes: number;
  framingErrors: Counter<'proxy' | 'reason'>;
}

/**
 * Keeps an exchange where a revocation of its token or agent finds it: the stream is reset, and
 * the returned function says why (undefined while nothing was revoked). Released when `over`
 * closes.
 */
export function trackRevocation(
  ctx: FrontContext<FrontTarget, string>,
  target: FrontTarget,
  stream: TunnelStream,
  over: { once(event: 'close', listener: () => void): unknown },
): () => ExchangeRevocation | undefined {
  let revoked: ExchangeRevocation | undefined;
  const release = ctx.openExchanges?.add({ agent: target.agent, jti: target.jti }, (why) => {
    revoked = why;
    stream.reset(TunnelErrorCode.CANCELLED, why.reason);
  });
  if (release) over.once('close', release);
  return () => revoked;
}

/**
 * Resets `stream` unless its head arrives by the request's deadline (the same one the Open
 * carries to the agent); returns the cancel.
 */
export function headDeadline(deadline: Deadline, stream: TunnelStream): () => void {
  return exchangeDeadline(deadline, stream, () => false);
}

/**
 * Resets `stream` unless its head and its whole body arrive by the request's deadline; returns
 * the cancel. A body that stalls after the head would otherwise hold the caller, the stream and
 * the agent's request to its cluster until a link failed.
 */
export function exchangeDeadline(
  deadline: Deadline,
  stream: TunnelStream,
  headArrived: () => boolean,
): () => void {
  return deadline.onExpiry(() =>
    stream.reset(
      TunnelErrorCode.DEADLINE_EXCEEDED,
      headArrived()
        ? `the answer was not complete within ${deadline.timeoutMs} ms`
        : `no answer within ${deadline.timeoutMs} ms`,
    ),
  );
}
