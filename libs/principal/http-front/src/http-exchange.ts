import type { IncomingMessage, ServerResponse } from 'node:http';
import { TunnelErrorCode, type TunnelStream } from '@pullplane/tunnel';

export interface HttpExchangeOptions {
  hasBody: boolean;
  /** Request body bytes allowed through; past them the stream is reset and `onTooLarge` runs. */
  maxBodyBytes: number;
  /** Each request body chunk's size, as it passes. */
  onBody(bytes: number): void;
  onTooLarge(): void;
}

/**
 * Ties a proxied HTTP exchange to its tunnel stream: a caller that goes away releases every hop
 * at once, and the request body flows into the stream under a byte cap (a chunked body has no
 * length to check up front).
 */
export function bindHttpExchange(
  req: IncomingMessage,
  res: ServerResponse,
  stream: TunnelStream,
  o: HttpExchangeOptions,
): void {
  res.on('close', () => {
    if (!res.writableFinished && !stream.destroyed)
      stream.reset(TunnelErrorCode.CANCELLED, 'client went away');
  });
  if (!o.hasBody) return;
  let total = 0;
  req.on('data', (chunk: Buffer) => {
    total += chunk.length;
    o.onBody(chunk.length);
    if (total > o.maxBodyBytes) {
      stream.reset(TunnelErrorCode.CANCELLED, 'request body over the limit');
      o.onTooLarge();
      req.destroy();
    }
  });
  req.pipe(stream);
}
