export { Deadline } from './deadline.js';
export {
  DEFAULT_INITIAL_WINDOW,
  DEFAULT_MAX_CHUNK_SIZE,
  DEFAULT_MAX_CONCURRENT_STREAMS,
  DEFAULT_MAX_STREAM_WINDOW,
  DEFAULT_SESSION_WINDOW_BUDGET,
  MAX_CHUNK_SIZE_LIMIT,
} from './defaults.js';
export {
  isRouteRefusal,
  isTunnelError,
  relayedResetCode,
  routeRefusalCode,
  TunnelError,
  TunnelErrorCode,
  TunnelErrors,
} from './errors.js';
export {
  FrameBatcher,
  type FrameBatcherOptions,
  type FrameSink,
  type FrameTransport,
  forEachFrame,
  TRANSPORT_HIGH_WATER,
  writableFrameTransport,
} from './frame-channel.js';
export { LogicalStream, type StreamHost, type TunnelStream } from './logical-stream.js';
export { createMemoryLink, type MemoryLink, memoryTunnel } from './memory-transport.js';
export {
  Multiplexer,
  type MultiplexerOptions,
  type PeerViolation,
  type ViolationKind,
} from './multiplexer.js';
export { readBuffered, readBufferedBody } from './read-buffered.js';
export type { AbortCause, StreamEntry } from './stream-entry.js';
export { bridgeUpgraded, type UpgradedBridgeOptions } from './upgraded-bridge.js';
export { WindowBudget } from './window-budget.js';
