export {
  FrameClient,
  type FrameClientOptions,
  parseTarget,
  TUNNEL_HTTP2_MAX_FRAME_SIZE,
  TUNNEL_HTTP2_WINDOW,
} from './frame-client.js';
export { type FrameCallHandlers, FrameClientCall } from './frame-client-call.js';
export { writeGrpcMessage } from './grpc-message-writer.js';
export {
  type CallStatus,
  grpcMessageText,
  grpcMessageValue,
  statusOfHeaders,
  statusOfHttp,
} from './grpc-status.js';
export {
  type ConnectionSecurity,
  type FileCredentialsInit,
  type TunnelCredentials,
  tunnelCredentials,
} from './tunnel-credentials.js';
