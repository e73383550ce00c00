import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Frame, FrameSchema } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export type FrameKind = NonNullable<Frame['kind']['case']>;
export type FrameInit = MessageInitShape<typeof FrameSchema>['kind'];

/** Builds a Frame from its oneof case, e.g. frame({ case: 'end', value: { streamId: 3 } }). */
export function frame(kind: FrameInit): Frame {
  return create(FrameSchema, { kind });
}
