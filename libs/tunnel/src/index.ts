export { isTunnelError, TunnelError, TunnelErrorCode } from './errors.js';
export { duplexFrameSink, type FrameSink, type FrameWritable, forEachFrame } from './frame-channel.js';
export { LogicalStream, type TunnelStream } from './logical-stream.js';
export { createMemoryLink, type MemoryLink } from './memory-transport.js';
export {
  DEFAULT_INITIAL_WINDOW,
  DEFAULT_MAX_CHUNK_SIZE,
  DEFAULT_MAX_CONCURRENT_STREAMS,
  MAX_CHUNK_SIZE_LIMIT,
  Multiplexer,
  type MultiplexerOptions,
  type OpenInit,
} from './multiplexer.js';
