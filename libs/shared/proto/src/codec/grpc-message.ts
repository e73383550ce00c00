import type { Frame } from '../gen/pullplane/tunnel/v1/tunnel_pb.js';
import { encodeFrameVectored } from './frame-encoder.js';

/** gRPC's length-prefixed message header: a compressed flag and a 32-bit big-endian length. */
export const GRPC_MESSAGE_PREFIX_BYTES = 5;

/**
 * One Frame as a gRPC message, in pieces for a vectored write: the 5-byte prefix and the framing
 * in one new buffer, every Data chunk and inline body of at least `minViewBytes` as the very
 * view it came in (a relayed payload is never copied). Pieces must be written before those views
 * are reused.
 */
export function grpcMessagePieces(f: Frame, minViewBytes?: number): Uint8Array[] {
  const pieces = encodeFrameVectored(f, {
    reserve: GRPC_MESSAGE_PREFIX_BYTES,
    ...(minViewBytes !== undefined ? { minViewBytes } : {}),
  });
  let length = -GRPC_MESSAGE_PREFIX_BYTES;
  for (const p of pieces) length += p.byteLength;
  const head = pieces[0]!;
  head[0] = 0;
  head[1] = length >>> 24;
  head[2] = (length >>> 16) & 0xff;
  head[3] = (length >>> 8) & 0xff;
  head[4] = length & 0xff;
  return pieces;
}

/** Why a stream of gRPC messages cannot be read on: the status to answer it with, and why. */
export class GrpcMessageError extends Error {
  constructor(
    /** `compressed`: a message flagged compressed, when no compression was agreed. */
    readonly reason: 'too_large' | 'compressed',
    message: string,
  ) {
    super(message);
    this.name = 'GrpcMessageError';
  }
}

export interface GrpcDeframerOptions {
  /** The largest message accepted; a larger one is refused before its body is read. */
  maxMessageBytes: number;
  onMessage(message: Buffer): void;
  /** The stream is broken: nothing more is read (every later push is ignored). */
  onError(err: GrpcMessageError): void;
}

/**
 * Cuts a byte stream into gRPC messages, push-style: chunks go in as they arrive, whole
 * messages come out in order. A message inside one chunk comes out as a view of it (no copy;
 * HTTP/2 hands every chunk over as a buffer of its own); one spread over chunks is gathered into
 * a buffer of exactly its length, allocated once its prefix has been read and checked.
 */
export class GrpcDeframer {
  private readonly prefix = Buffer.alloc(GRPC_MESSAGE_PREFIX_BYTES);
  private prefixHave = 0;
  /** The message being gathered, and how much of it has arrived. */
  private body: Buffer | undefined;
  private bodyHave = 0;
  private failed = false;

  constructor(private readonly opts: GrpcDeframerOptions) {}

  /** Whether the stream ended between messages (an end anywhere else cut a message short). */
  get atBoundary(): boolean {
    return !this.failed && this.prefixHave === 0 && this.body === undefined;
  }

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.failed) {
      if (this.body !== undefined) {
        const n = Math.min(chunk.length - at, this.body.length - this.bodyHave);
        chunk.copy(this.body, this.bodyHave, at, at + n);
        this.bodyHave += n;
        at += n;
        if (this.bodyHave === this.body.length) {
          const message = this.body;
          this.body = undefined;
          this.opts.onMessage(message);
        }
        continue;
      }
      if (this.prefixHave === 0 && chunk.length - at >= GRPC_MESSAGE_PREFIX_BYTES) {
        // The common case: the whole prefix in this chunk.
        const length = this.checkPrefix(chunk[at]!, chunk.readUInt32BE(at + 1));
        if (length < 0) return;
        at += GRPC_MESSAGE_PREFIX_BYTES;
        if (chunk.length - at >= length) {
          const message = chunk.subarray(at, at + length);
          at += length;
          this.opts.onMessage(message);
        } else this.startBody(length);
        continue;
      }
      const n = Math.min(chunk.length - at, GRPC_MESSAGE_PREFIX_BYTES - this.prefixHave);
      chunk.copy(this.prefix, this.prefixHave, at, at + n);
      this.prefixHave += n;
      at += n;
      if (this.prefixHave < GRPC_MESSAGE_PREFIX_BYTES) continue;
      this.prefixHave = 0;
      const length = this.checkPrefix(this.prefix[0]!, this.prefix.readUInt32BE(1));
      if (length < 0) return;
      if (length === 0) this.opts.onMessage(Buffer.alloc(0));
      else this.startBody(length);
    }
  }

  private startBody(length: number): void {
    this.body = Buffer.allocUnsafe(length);
    this.bodyHave = 0;
  }

  /** The message length, or -1 once the stream failed. */
  private checkPrefix(flag: number, length: number): number {
    if (flag !== 0) {
      return this.fail(
        new GrpcMessageError(
          'compressed',
          flag === 1
            ? 'a compressed message, and no compression was agreed'
            : `a message prefix with flags ${flag}`,
        ),
      );
    }
    if (length > this.opts.maxMessageBytes) {
      return this.fail(
        new GrpcMessageError(
          'too_large',
          `Received message larger than max (${length} vs. ${this.opts.maxMessageBytes})`,
        ),
      );
    }
    return length;
  }

  private fail(err: GrpcMessageError): number {
    this.failed = true;
    this.body = undefined;
    this.opts.onError(err);
    return -1;
  }
}
