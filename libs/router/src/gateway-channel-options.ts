import type { ChannelOptions } from '@grpc/grpc-js';
import { MAX_TUNNEL_MESSAGE_BYTES } from '@pullplane/proto';

/** HTTP/2 receive window, per stream and for the connection, on a proxy's gateway clients. */
export const GATEWAY_CLIENT_WINDOW = 4 * 1024 * 1024;

export interface GatewayChannelOptionsInit {
  /** Name to verify in the gateway's certificate when it is dialled by pod IP. */
  serverNameOverride?: string | undefined;
}

/**
 * Channel options of a proxy replica's client towards a gateway's internal listener.
 *
 * `grpc-node.flow_control_window` is the one HTTP/2 knob grpc-js (1.14) has on the client:
 * it is both the initial stream window in the first SETTINGS frame and, by a WINDOW_UPDATE
 * before the first call, the connection window. Without it Node's 64 KiB would cap every
 * response (and all of them together) at 64 KiB per round trip. The client's maximum frame
 * size cannot be set through grpc-js and stays at HTTP/2's 16 KiB.
 */
export function gatewayChannelOptions(init: GatewayChannelOptionsInit = {}): ChannelOptions {
  return {
    'grpc.keepalive_time_ms': 20_000,
    'grpc.keepalive_timeout_ms': 5_000,
    'grpc.max_receive_message_length': MAX_TUNNEL_MESSAGE_BYTES,
    'grpc-node.max_session_memory': 256,
    ...(init.serverNameOverride ? { 'grpc.ssl_target_name_override': init.serverNameOverride } : {}),
    'grpc-node.flow_control_window': GATEWAY_CLIENT_WINDOW,
    // Fail fast on a dead gateway instead of backing off for a minute.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 2_000,
  };
}
