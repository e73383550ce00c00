export { decodeFrameFast } from './codec/frame-decoder.js';
export {
  DEFAULT_MIN_VIEW_BYTES,
  encodedFrameLength,
  encodeFrameFast,
  encodeFrameInto,
  encodeFrameVectored,
} from './codec/frame-encoder.js';
export {
  GRPC_MESSAGE_PREFIX_BYTES,
  GrpcDeframer,
  type GrpcDeframerOptions,
  GrpcMessageError,
  grpcMessagePieces,
} from './codec/grpc-message.js';
export { type StreamFrame, streamIdOf, withStreamId } from './codec/relay.js';
export {
  acceptedFrame,
  batchFrame,
  dataFrame,
  endFrame,
  type FrameInit,
  type FrameKind,
  frame,
  requestHasBody,
  resetFrame,
  responseHeadFrame,
  windowUpdateFrame,
} from './frame.js';
// OTLP's trace export schema: what the test receiver decodes (exporters come from the OTel SDK).
export {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
} from './gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js';
export type { AnyValue, KeyValue } from './gen/opentelemetry/proto/common/v1/common_pb.js';
export {
  type Span as OtlpSpan,
  Span_SpanKind as OtlpSpanKind,
  Status_StatusCode as OtlpStatusCode,
} from './gen/opentelemetry/proto/trace/v1/trace_pb.js';
export {
  type Accepted,
  type Batch,
  type Data,
  type End,
  type ExtensionRequestHead,
  ExtensionRequestHeadSchema,
  type Frame,
  FrameSchema,
  type GoAway,
  type Header,
  type Hello,
  HelloSchema,
  type HttpRequestHead,
  HttpRequestHeadSchema,
  type Open,
  OpenSchema,
  type Ping,
  type Pong,
  ProtocolVersion,
  type RedisRequestHead,
  type Registration,
  RegistrationSchema,
  type Reset,
  ResetCode,
  type ResponseHead,
  ResponseHeadSchema,
  type Welcome,
  WelcomeSchema,
  type WindowUpdate,
} from './gen/pullplane/tunnel/v1/tunnel_pb.js';
export {
  BATCH_ENTRY_OVERHEAD,
  DEFAULT_MAX_RESPONSE_HEADER_BYTES,
  DEFAULT_MAX_RESPONSE_HEADERS,
  frameSizeBound,
  type HeadLimits,
  headOverLimits,
  MAX_CHUNK_BYTES,
  MAX_RESET_MESSAGE_CHARS,
  MAX_RESPONSE_HEADER_BYTES_LIMIT,
  MAX_TUNNEL_MESSAGE_BYTES,
} from './limits.js';
export { type OpenMessageInit, openMessage } from './open-message.js';
export { checkRequestPath } from './request-path.js';
export {
  AGENT_TUNNEL_CONNECT_PATH,
  agentTunnelService,
  decodeFrame,
  encodeFrame,
  GATEWAY_FORWARD_PATH,
  GATEWAY_LINK_PATH,
  gatewayForwardService,
} from './services.js';
export { negotiateVersion, PROTOCOL_VERSION_MAX, PROTOCOL_VERSION_MIN } from './version.js';
