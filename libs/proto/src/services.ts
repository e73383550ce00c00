import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { type Frame, FrameSchema } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export const AGENT_TUNNEL_CONNECT_PATH = '/pullplane.tunnel.v1.AgentTunnel/Connect';
export const GATEWAY_FORWARD_PATH = '/pullplane.tunnel.v1.GatewayForward/Forward';

export function encodeFrame(message: Frame): Buffer {
  const bytes = toBinary(FrameSchema, message);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function decodeFrame(bytes: Buffer): Frame {
  return fromBinary(FrameSchema, bytes);
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
} satisfies ServiceDefinition;
