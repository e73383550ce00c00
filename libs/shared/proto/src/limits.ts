import { encodedFrameLength } from './codec/frame-encoder.js';
import type { Frame } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

/**
 * The largest message any endpoint of a tunnel or proxy link accepts (gRPC's receive limit on
 * the gateway's listeners, the proxies' and the agents' clients), and so the largest any of
 * them may send: one constant, so the two ends cannot disagree.
 */
export const MAX_TUNNEL_MESSAGE_BYTES = 4 * 1024 * 1024 + 1024;

/** The largest body chunk (a Data chunk, or a body inline in a head) anyone may send. */
export const MAX_CHUNK_BYTES = 1024 * 1024;

/** Default limits on what an agent may put in one ResponseHead (flags may change them). */
export const DEFAULT_MAX_RESPONSE_HEADERS = 256;
export const DEFAULT_MAX_RESPONSE_HEADER_BYTES = 256 * 1024;
/** The highest header-bytes limit that still lets the largest head fit in one message. */
export const MAX_RESPONSE_HEADER_BYTES_LIMIT = 960 * 1024;

/** A Reset's reason is for logs and Status messages: longer ones are cut to this many characters. */
export const MAX_RESET_MESSAGE_CHARS = 1024;

/**
 * Limits on the heads an untrusted peer sends (the gateway holds agents to them). Header bytes
 * count the characters of names and values, as decoded.
 */
export interface HeadLimits {
  maxHeaders: number;
  maxHeaderBytes: number;
}

// With these ceilings, the largest frame any side may produce (a head at its limits plus a whole
// chunk inline, under the longest stream id) fits in one message with room to spare.
const HEADROOM = 64 * 1024;
if (MAX_CHUNK_BYTES + 3 * MAX_RESPONSE_HEADER_BYTES_LIMIT + HEADROOM > MAX_TUNNEL_MESSAGE_BYTES)
  throw new Error('tunnel limits: the largest head and chunk must fit in one message');

/**
 * An upper bound on a frame's encoded size, cheap where it matters: Data (the bulk of the
 * traffic) and the small control frames by arithmetic, heads and everything else measured.
 */
export function frameSizeBound(f: Frame): number {
  const k = f.kind;
  switch (k.case) {
    case 'data':
      // Frame tag + length, stream id, chunk tag + length, end flag.
      return k.value.chunk.byteLength + 24;
    case 'windowUpdate':
    case 'end':
    case 'accepted':
    case 'ping':
    case 'pong':
      return 32;
    case 'reset':
      // UTF-8 takes at most three bytes per UTF-16 unit.
      return 32 + 3 * k.value.message.length;
    default:
      return encodedFrameLength(f);
  }
}

/** What nesting a frame in a Batch adds: its tag and length. */
export const BATCH_ENTRY_OVERHEAD = 6;

/** How far a head is over `limits`, in words for the Reset and the log; undefined if within. */
export function headOverLimits(
  headers: ReadonlyArray<{ name: string; value: string }>,
  limits: HeadLimits,
): string | undefined {
  if (headers.length > limits.maxHeaders)
    return `${headers.length} headers (the limit is ${limits.maxHeaders})`;
  let bytes = 0;
  for (const h of headers) bytes += h.name.length + h.value.length;
  if (bytes > limits.maxHeaderBytes)
    return `${bytes} bytes of headers (the limit is ${limits.maxHeaderBytes})`;
  return undefined;
}
