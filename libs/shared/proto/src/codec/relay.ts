import type { Frame } from '../gen/pullplane/tunnel/v1/tunnel_pb.js';

/** Frames that belong to one logical stream, and so carry its id. */
export type StreamFrame = Extract<
  Frame['kind'],
  { case: 'open' | 'responseHead' | 'data' | 'end' | 'reset' | 'windowUpdate' }
>;

/** The stream a frame belongs to, or undefined for tunnel-level frames (ping, goAway, batch...). */
export function streamIdOf(f: Frame): number | undefined {
  switch (f.kind.case) {
    case 'open':
    case 'responseHead':
    case 'data':
    case 'end':
    case 'reset':
    case 'windowUpdate':
      return f.kind.value.streamId;
    default:
      return undefined;
  }
}

/**
 * The same frame under another stream id, for relaying between two multiplexed links. Only the
 * small frame object is new: headers, chunks and inline bodies are the very same values (a
 * decoded chunk stays a view of the buffer it arrived in), so encoding the result vectored
 * (encodeFrameVectored) sends the payload on without copying it.
 */
export function withStreamId(f: Frame, streamId: number): Frame {
  const k = f.kind;
  switch (k.case) {
    case 'open':
    case 'responseHead':
    case 'data':
    case 'end':
    case 'reset':
    case 'windowUpdate':
      return {
        $typeName: f.$typeName,
        kind: { case: k.case, value: { ...k.value, streamId } } as StreamFrame,
      };
    default:
      throw new Error(`a ${k.case ?? 'empty'} frame belongs to no stream`);
  }
}
