import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Frame, FrameSchema, type Open, type ResetCode } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export type FrameKind = NonNullable<Frame['kind']['case']>;
export type FrameInit = MessageInitShape<typeof FrameSchema>['kind'];

/** Builds a Frame from its oneof case, e.g. frame({ case: 'end', value: { streamId: 3 } }). */
export function frame(kind: FrameInit): Frame {
  return create(FrameSchema, kind === undefined ? {} : { kind });
}

/**
 * Whether a request carries a body at all: one that follows in Data frames, or a small one
 * sent inline in the Open. (`hasBody` alone is the end-of-stream flag of the request side.)
 */
export function requestHasBody(open: Open): boolean {
  return open.hasBody || open.body.byteLength > 0;
}

// Constructors for the frames every request sends. They build the same objects as frame()
// (same properties, same order, so the same hidden classes) without protobuf-es's reflective
// initialisation, which costs more than encoding the frame.
const EMPTY = new Uint8Array(0);

export function dataFrame(streamId: number, chunk: Uint8Array, endStream = false): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: { case: 'data', value: { $typeName: 'pullplane.tunnel.v1.Data', streamId, chunk, endStream } },
  };
}

export function endFrame(streamId: number): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: { case: 'end', value: { $typeName: 'pullplane.tunnel.v1.End', streamId } },
  };
}

export function windowUpdateFrame(streamId: number, increment: number): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: {
      case: 'windowUpdate',
      value: { $typeName: 'pullplane.tunnel.v1.WindowUpdate', streamId, increment },
    },
  };
}

export function resetFrame(streamId: number, code: ResetCode, message: string): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: { case: 'reset', value: { $typeName: 'pullplane.tunnel.v1.Reset', streamId, code, message } },
  };
}

export function responseHeadFrame(
  streamId: number,
  status: number,
  headers: ReadonlyArray<{ name: string; value: string }>,
): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: {
      case: 'responseHead',
      value: {
        $typeName: 'pullplane.tunnel.v1.ResponseHead',
        streamId,
        status,
        headers: headers.map((h) => ({
          $typeName: 'pullplane.tunnel.v1.Header',
          name: h.name,
          value: h.value,
        })),
        endStream: false,
        body: EMPTY,
      },
    },
  };
}

export function batchFrame(frames: Frame[]): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: { case: 'batch', value: { $typeName: 'pullplane.tunnel.v1.Batch', frames } },
  };
}

/** Link only: the agent's tunnel took the stream; the proxy may send the rest of the body. */
export function acceptedFrame(streamId: number): Frame {
  return {
    $typeName: 'pullplane.tunnel.v1.Frame',
    kind: { case: 'accepted', value: { $typeName: 'pullplane.tunnel.v1.Accepted', streamId } },
  };
}
