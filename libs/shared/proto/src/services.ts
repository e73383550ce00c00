import { toBinary } from '@bufbuild/protobuf';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { decodeFrameFast } from './codec/frame-decoder.js';
import { encodeFrameFast } from './codec/frame-encoder.js';
import { type Frame, FrameSchema } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export const AGENT_TUNNEL_CONNECT_PATH = '/pullplane.tunnel.v1.AgentTunnel/Connect';
/** Retired (see tunnel.proto): gateways answer it UNIMPLEMENTED, saying why. */
export const GATEWAY_FORWARD_PATH = '/pullplane.tunnel.v1.GatewayForward/Forward';
export const GATEWAY_LINK_PATH = '/pullplane.tunnel.v1.GatewayForward/Link';

/**
 * Frame -> bytes for gRPC. Hot frames (and batches) take the hand-written codec; the cold ones,
 * sent once per connection or heartbeat, stay with protobuf-es. Both write the same bytes.
 */
export function encodeFrame(message: Frame): Buffer {
  switch (message.kind.case) {
    case 'hello':
    case 'welcome':
    case 'ping':
    case 'pong':
    case 'goAway':
    case 'accepted':
    case 'registration': {
      const bytes = toBinary(FrameSchema, message);
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    default:
      return encodeFrameFast(message);
  }
}

/**
 * bytes -> Frame for gRPC. The fast decoder reads every frame (delegating the bodies of cold
 * frames to protobuf-es) and returns Data chunks as views of `bytes`, which grpc-js hands over
 * and never reuses.
 */
export function decodeFrame(bytes: Buffer): Frame {
  return decodeFrameFast(bytes);
}

const bidiFrames = {
  requestStream: true,
  responseStream: true,
  requestSerialize: encodeFrame,
  requestDeserialize: decodeFrame,
  responseSerialize: encodeFrame,
  responseDeserialize: decodeFrame,
} as const;

// grpc-js needs a hand-written definition per service: protobuf-es v2 does not emit grpc-js stubs.
export const agentTunnelService = {
  connect: { path: AGENT_TUNNEL_CONNECT_PATH, originalName: 'Connect', ...bidiFrames },
} satisfies ServiceDefinition;

export const gatewayForwardService = {
  forward: { path: GATEWAY_FORWARD_PATH, originalName: 'Forward', ...bidiFrames },
  link: { path: GATEWAY_LINK_PATH, originalName: 'Link', ...bidiFrames },
} satisfies ServiceDefinition;
