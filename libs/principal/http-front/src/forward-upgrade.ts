import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import {
  bridgeUpgraded,
  Deadline,
  isTunnelError,
  TunnelErrorCode,
  type TunnelStream,
} from '@pullplane/tunnel';
import { ExchangeRecord } from './exchange-record.js';
import { type FrontContext, headDeadline, trackRevocation } from './front-context.js';
import { exchangeFailure, tunnelFailure } from './front-failures.js';
import type { FrontTarget } from './proxy-route.js';
import { answerText, type Failure, reasonPhrase } from './status-answer.js';

const CR_LF = /[\r\n]/;

/**
 * An `Upgrade` request through the front: the proxy screens it (protocols it never forwards are
 * refused before any credential is looked at), accepts it like any request, and the agent's
 * answer decides: a 101 joins the caller's connection to the stream (`bridgeUpgraded`), anything
 * else is relayed and the connection closed.
 */
export async function forwardUpgrade<T extends FrontTarget, N extends string>(
  ctx: FrontContext<T, N>,
  req: IncomingMessage,
  socket: Socket,
  rest: Buffer,
): Promise<void> {
  const { route } = ctx;
  // One deadline, from the upgrade's arrival, until the 101 (or the refusal) comes back.
  const deadline = Deadline.after(ctx.requestTimeoutMs);
  const x = new ExchangeRecord(route, req, ctx.tracer);
  socket.on('error', () => undefined);
  const refuse = (f: Failure<N>, upgrade: string | true) => {
    const a = route.answer(f);
    if (socket.writable) socket.end(answerText(a));
    x.finish(a.status, { failure: f.name, error: f.detail ?? f.name, upgrade });
  };
  try {
    const screened = route.screenUpgrade(req);
    if (screened) return refuse(screened, true);
    const protocol = String(req.headers.upgrade ?? '');
    const accepted = await route.accept(req);
    if (!accepted.ok) {
      x.target = accepted.target;
      return refuse(accepted.failure, true);
    }
    const target = accepted.target;
    const trace = x.accept(target);
    const refused = route.admit?.(req, target);
    if (refused) return refuse(refused, protocol);
    let stream: TunnelStream;
    try {
      // Bytes after the 101 follow as Data; none are sent before it.
      stream = ctx.router.open(target.agent, {
        head: route.head(req, target, accepted.headers, protocol),
        hasBody: true,
        requestId: x.requestId,
        ...trace,
        deadline,
      });
    } catch (err) {
      if (isTunnelError(err))
        return refuse({ name: route.failures[tunnelFailure(err)], detail: err.message }, protocol);
      throw err;
    }
    const revoked = trackRevocation(ctx, target, stream, socket);
    const gone = () => {
      if (!stream.destroyed) stream.reset(TunnelErrorCode.CANCELLED, 'client went away');
    };
    socket.once('close', gone);
    const cancelDeadline = headDeadline(deadline, stream);
    let head: Awaited<ReturnType<TunnelStream['responseHead']>>;
    try {
      head = await stream.responseHead();
    } catch (err) {
      return refuse(exchangeFailure(route.failures, err, revoked()), protocol);
    } finally {
      cancelDeadline();
    }
    socket.off('close', gone);
    route.headArrived(req, target, x.elapsed());
    const lines = [`HTTP/1.1 ${head.status} ${reasonPhrase(head.status)}`];
    for (const h of head.headers) {
      const lower = h.name.toLowerCase();
      // The proxy's rule, except that a 101 names the protocol it switches to.
      if (route.stripResponse(lower) && lower !== 'upgrade') continue;
      if (CR_LF.test(h.name) || CR_LF.test(h.value)) continue;
      lines.push(`${h.name}: ${h.value}`);
    }
    if (head.status !== 101) {
      // The backend declined the upgrade: its answer, then the connection closes. The request
      // side carried nothing and ends here, so the stream closes once the answer is through.
      stream.end();
      lines.push('connection: close');
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      // pipe() ends the connection after the answer's last byte; destroying it on 'close'
      // instead could drop bytes still being written (an answer that came with its head).
      stream.pipe(socket);
      stream.on('close', () => {
        if (stream.errored) socket.destroy();
      });
      return x.finish(head.status, { upgrade: protocol });
    }
    lines.push('connection: Upgrade');
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    bridgeUpgraded(socket, stream, {
      head: rest,
      onClose: (s) => {
        x.bytesIn = s.bytesIn;
        x.bytesOut = s.bytesOut;
        const cancelled = isTunnelError(s.error) && s.error.code === TunnelErrorCode.CANCELLED;
        x.finish(101, {
          upgrade: protocol,
          ...(s.error ? { failure: 'UPGRADED_STREAM', error: s.error.message, cancelled } : {}),
        });
      },
    });
  } catch (err) {
    ctx.logger.error({ err: String(err) }, `${route.proxy} proxy upgrade failed`);
    socket.destroy();
  }
}
