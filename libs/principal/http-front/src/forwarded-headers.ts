import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface ForwardedHeader {
  name: string;
  value: string;
}

/** The request's headers as sent (names, order and repeats kept), without those `strip` names (lower-case). */
export function forwardedHeaders(req: IncomingMessage, strip: (lower: string) => boolean): ForwardedHeader[] {
  const out: ForwardedHeader[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!strip(name.toLowerCase())) out.push({ name, value: raw[i + 1]! });
  }
  return out;
}

/** The caller's request id (at most 64 characters), or a new one. */
export function requestIdOf(req: IncomingMessage): string {
  return (req.headers['x-request-id'] as string | undefined)?.slice(0, 64) || randomUUID();
}
