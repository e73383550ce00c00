import type { IncomingMessage, ServerResponse } from 'node:http';
import { Deadline, isTunnelError } from '@pullplane/tunnel';
import { ExchangeRecord } from './exchange-record.js';
import { exchangeDeadline, type FrontContext, headDeadline, trackRevocation } from './front-context.js';
import { exchangeFailure, tunnelFailure } from './front-failures.js';
import { bindHttpExchange } from './http-exchange.js';
import { relayHttpResponse } from './http-response.js';
import type { FrontTarget } from './proxy-route.js';
import type { Failure } from './status-answer.js';

/**
 * One HTTP exchange through the front: the proxy's screen and acceptance, the body limit, the
 * Open on the agent's tunnel, revocation and the head deadline, then the agent's answer relayed
 * with honest framing. Every path ends in exactly one report to the proxy.
 */
export async function forwardRequest<T extends FrontTarget, N extends string>(
  ctx: FrontContext<T, N>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { route } = ctx;
  // One deadline for the request, from its arrival: routing, the agent's answer and our timer.
  const deadline = Deadline.after(ctx.requestTimeoutMs);
  const x = new ExchangeRecord(route, req, ctx.tracer);
  const fail = (f: Failure<N>) => {
    const a = route.answer(f);
    if (!res.headersSent) res.writeHead(a.status, a.headers).end(a.body);
    else res.destroy();
    x.finish(a.status, { failure: f.name, error: f.detail ?? f.name });
    req.resume();
  };
  try {
    const screened = route.screen?.(req);
    if (screened) return fail(screened);
    const accepted = await route.accept(req);
    if (!accepted.ok) {
      x.target = accepted.target;
      return fail(accepted.failure);
    }
    const target = accepted.target;
    const trace = x.accept(target);
    const refused = route.admit?.(req, target);
    if (refused) return fail(refused);
    const max = ctx.maxRequestBodyBytes;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) return fail({ name: route.failures.TOO_LARGE, detail: `${declared} bytes > ${max}` });
    const hasBody = declared > 0 || req.headers['transfer-encoding'] !== undefined;
    let stream: ReturnType<typeof ctx.router.open>;
    try {
      stream = ctx.router.open(target.agent, {
        head: route.head(req, target, accepted.headers, ''),
        hasBody,
        requestId: x.requestId,
        ...trace,
        deadline,
      });
    } catch (err) {
      if (isTunnelError(err)) return fail({ name: route.failures[tunnelFailure(err)], detail: err.message });
      throw err;
    }
    const revoked = trackRevocation(ctx, target, stream, res);
    bindHttpExchange(req, res, stream, {
      hasBody,
      maxBodyBytes: max,
      onBody: (n) => {
        x.bytesIn += n;
      },
      onTooLarge: () => fail({ name: route.failures.TOO_LARGE, detail: `more than ${max} bytes` }),
    });
    const wholeAnswer = route.deadlineCoversBody(target);
    let head: Awaited<ReturnType<typeof stream.responseHead>> | undefined;
    // Every answer's head is due by the deadline: an API server sends a watch's or a followed
    // log's head at once, so one that does not come is a lost agent, not a slow stream.
    const cancelDeadline = wholeAnswer
      ? exchangeDeadline(deadline, stream, () => head !== undefined)
      : headDeadline(deadline, stream);
    try {
      head = await stream.responseHead();
    } catch (err) {
      cancelDeadline();
      // Answered already (the body was over the limit), or the caller went away.
      if (res.writableEnded || res.destroyed) return;
      return fail(exchangeFailure(route.failures, err, revoked()));
    }
    if (!wholeAnswer) cancelDeadline();
    const answered = head;
    route.headArrived(req, target, x.elapsed());
    relayHttpResponse(req, res, stream, answered, {
      strip: (lower) => route.stripResponse(lower),
      flushHead: route.flushHead(target),
      onBody: (n) => {
        x.bytesOut += n;
      },
      onFramingViolation: (reason, detail) => {
        ctx.framingErrors.inc({ proxy: route.proxy, reason });
        ctx.logger.warn(
          {
            requestId: x.requestId,
            agent: target.agent,
            ...route.describe(target),
            status: answered.status,
            reason,
            detail,
          },
          'agent response broke HTTP framing',
        );
      },
      onEnd: ({ error, cancelled }) => {
        cancelDeadline();
        if (!error) return x.finish(answered.status);
        x.finish(answered.status, {
          failure: 'MID_BODY',
          error: error.message,
          cancelled: Boolean(cancelled),
        });
      },
    });
  } catch (err) {
    ctx.logger.error({ err: String(err), path: req.url }, `${route.proxy} proxy handler failed`);
    fail({ name: route.failures.FAILED, detail: 'internal proxy error' });
  }
}
