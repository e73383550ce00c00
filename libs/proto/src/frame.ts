import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Frame, FrameSchema, type Open } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export type FrameKind = NonNullable<Frame['kind']['case']>;
export type FrameInit = MessageInitShape<typeof FrameSchema>['kind'];

/** Builds a Frame from its oneof case, e.g. frame({ case: 'end', value: { streamId: 3 } }). */
export function frame(kind: FrameInit): Frame {
  return create(FrameSchema, { kind });
}

/**
 * Whether a request carries a body at all: one that follows in Data frames, or a small one
 * sent inline in the Open. (`hasBody` alone is the end-of-stream flag of the request side.)
 */
export function requestHasBody(open: Open): boolean {
  return open.hasBody || open.body.byteLength > 0;
}
