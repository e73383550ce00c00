import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isTunnelError,
  readBufferedBody,
  TunnelError,
  TunnelErrorCode,
  type TunnelStream,
} from '@pullplane/tunnel';

/** Ways an agent's response head and body can disagree, as metric reasons. */
export type ResponseFramingViolation =
  /** More body bytes than the Content-Length: the extra would be read as a second response. */
  | 'body_over_length'
  /** The body ended before the Content-Length: the caller would wait, or misread the next response. */
  | 'body_under_length'
  /** A Content-Length that is not one decimal number (or several that disagree). */
  | 'bad_content_length'
  /** Transfer-Encoding and Content-Length together: the length means nothing (RFC 9112 §6.3). */
  | 'length_with_transfer_encoding'
  /** Body bytes on a response that has none (HEAD, 1xx, 204, 304). */
  | 'body_not_allowed';

/** The counter both HTTP proxies register (one definition, `proxy` tells them apart). */
export const RESPONSE_FRAMING_METRIC = {
  name: 'proxy_response_framing_errors_total',
  help: 'Agent responses whose body disagreed with their head (the caller connection is closed or the body re-framed), by proxy and reason.',
  labelNames: ['proxy', 'reason'],
} as const;

export interface HttpResponseRelayOptions {
  /** Whether a response header (lower-case name) stays behind. */
  strip(lowerName: string): boolean;
  /** Send the head at once when no body came with it (event streams and watches must not wait). */
  flushHead: boolean;
  /** Body bytes as they are handed to the caller. */
  onBody(bytes: number): void;
  /** The agent's response broke its own framing; `detail` says how (for the log). */
  onFramingViolation(reason: ResponseFramingViolation, detail: string): void;
  /**
   * The response is over: whole, or cut after its head (`error`: the stream failed, or its
   * framing did; `cancelled`: the caller went away first).
   */
  onEnd(outcome: { error?: Error; cancelled?: boolean }): void;
}

const DECIMAL = /^\d{1,15}$/;

/**
 * Writes an agent's response to the caller with framing the caller can trust: the head goes
 * out without hop-by-hop headers, and the body never says more or less than the head promised.
 * A body past its Content-Length is cut at the promised length, the stream is reset and the
 * caller's connection closed (the extra bytes would otherwise be read as the next response on
 * a keep-alive connection); a body short of it closes the connection (a truncated response,
 * never a connection left waiting or reused). A Content-Length that cannot be trusted is
 * dropped and the body re-framed (chunked). Bodiless responses carry no body bytes.
 */
export function relayHttpResponse(
  req: IncomingMessage,
  res: ServerResponse,
  stream: TunnelStream,
  head: { status: number; headers: ReadonlyArray<{ name: string; value: string }> },
  o: HttpResponseRelayOptions,
): void {
  const status = head.status;
  const bodiless =
    req.method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
  const out: Record<string, string | string[]> = {};
  let transferEncoding = false;
  // Every Content-Length value (a header may list several), made only when there is one.
  let lengths: string[] | undefined;
  for (const h of head.headers) {
    const lower = h.name.toLowerCase();
    if (lower === 'content-length') {
      lengths ??= [];
      if (!h.value.includes(',')) lengths.push(h.value.trim());
      else for (const v of h.value.split(',')) lengths.push(v.trim());
      continue;
    }
    if (lower === 'transfer-encoding') transferEncoding = true;
    if (o.strip(lower)) continue;
    const prev = out[lower];
    out[lower] = prev === undefined ? h.value : ([] as string[]).concat(prev, h.value);
  }
  let declared: number | undefined;
  if (lengths !== undefined) {
    const first = lengths[0] as string;
    if (transferEncoding)
      o.onFramingViolation(
        'length_with_transfer_encoding',
        'Transfer-Encoding with Content-Length: the length is dropped',
      );
    else if (!lengths.every((v) => v === first) || !DECIMAL.test(first))
      o.onFramingViolation(
        'bad_content_length',
        `Content-Length ${JSON.stringify(lengths.join(',').slice(0, 64))} is dropped`,
      );
    // A 204 and a 1xx have no Content-Length; HEAD and 304 keep the length of the full body.
    else if (status !== 204 && !(status >= 100 && status < 200)) {
      declared = Number(first);
      out['content-length'] = first;
    }
  }
  res.writeHead(status, out);

  let done = false;
  const finish = (outcome: { error?: Error; cancelled?: boolean }) => {
    if (done) return;
    done = true;
    o.onEnd(outcome);
  };
  /** The agent broke framing after the head: its stream goes, and so does this connection. */
  const breakOff = (reason: ResponseFramingViolation, detail: string, promised?: Buffer) => {
    o.onFramingViolation(reason, detail);
    if (!stream.destroyed) stream.reset(TunnelErrorCode.PROTOCOL, detail);
    const socket = res.socket;
    if (promised) {
      // The promised bytes complete the response the caller was told of; then the connection
      // closes, so nothing the agent sent beyond can be read as another response.
      res.end(promised, () => socket?.destroy());
    } else if (socket && !socket.destroyed) {
      // What was written goes out, then the connection closes mid-body: a truncated response.
      socket.end(() => socket.destroy());
    } else res.destroy();
    finish({ error: new TunnelError(TunnelErrorCode.PROTOCOL, detail) });
  };

  if (bodiless) {
    res.end();
    finish({});
    stream.on('data', (chunk: Buffer) => {
      if (chunk.length > 0 && !stream.destroyed) {
        o.onFramingViolation('body_not_allowed', `${chunk.length} body bytes on a response with no body`);
        stream.reset(TunnelErrorCode.PROTOCOL, 'body bytes on a response with no body');
      }
    });
    return;
  }

  let sent = 0;
  /** The part of `chunk` the head allows; undefined when the agent overran it (handled). */
  const allowed = (chunk: Buffer): Buffer | undefined => {
    if (declared === undefined || sent + chunk.length <= declared) {
      sent += chunk.length;
      o.onBody(chunk.length);
      return chunk;
    }
    const promised = chunk.subarray(0, declared - sent);
    sent += promised.length;
    o.onBody(promised.length);
    breakOff(
      'body_over_length',
      `the agent sent more than the ${declared} bytes its Content-Length promised`,
      promised,
    );
    return undefined;
  };
  const endBody = (last?: Buffer) => {
    if (declared !== undefined && sent < declared) {
      if (last && last.length > 0) res.write(last);
      return breakOff('body_under_length', `the body ended after ${sent} of ${declared} promised bytes`);
    }
    if (last) res.end(last);
    else res.end();
    finish({});
  };

  // Body bytes that came with the head (often all of a small response, and its end) leave in
  // one write with the status line: the 'data' and 'end' events would come ticks later, and the
  // end of a chunked body would be a write of its own.
  const { body, complete } = readBufferedBody(stream);
  const first = allowed(body);
  if (!first) return;
  if (complete) {
    endBody(first);
    // The stream still emits 'end' and closes, releasing the tunnel side.
    stream.resume();
    return;
  }
  if (first.length > 0) res.write(first);
  else if (o.flushHead) res.flushHeaders();
  stream.on('data', (chunk: Buffer) => {
    if (done) return;
    const part = allowed(chunk);
    if (part && !res.write(part)) {
      stream.pause();
      res.once('drain', () => stream.resume());
    }
  });
  stream.on('end', () => {
    if (!done) endBody();
  });
  stream.on('close', () => {
    if (done || !stream.errored) return;
    // Mid-body failure: the status line is gone, so the only honest signal is a cut.
    res.destroy();
    const cancelled = isTunnelError(stream.errored) && stream.errored.code === TunnelErrorCode.CANCELLED;
    finish({ error: stream.errored, cancelled });
  });
}
