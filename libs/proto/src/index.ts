export {
  type Data,
  type End,
  type Frame,
  FrameSchema,
  type GoAway,
  type Header,
  type Hello,
  type HttpRequestHead,
  type Open,
  type Ping,
  type Pong,
  ProtocolVersion,
  type RedisRequestHead,
  type Reset,
  ResetCode,
  type ResponseHead,
  type Welcome,
  type WindowUpdate,
} from './gen/pullplane/tunnel/v1/tunnel_pb.js';
export {
  AGENT_TUNNEL_CONNECT_PATH,
  agentTunnelService,
  decodeFrame,
  encodeFrame,
  GATEWAY_FORWARD_PATH,
  gatewayForwardService,
} from './services.js';
export { frame, type FrameInit, type FrameKind } from './frame.js';
export { PROTOCOL_VERSION_MAX, PROTOCOL_VERSION_MIN, negotiateVersion } from './version.js';
