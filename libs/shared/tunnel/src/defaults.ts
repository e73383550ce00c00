import { MAX_CHUNK_BYTES } from '@pullplane/proto';

export const DEFAULT_MAX_CHUNK_SIZE = 64 * 1024;
export const MAX_CHUNK_SIZE_LIMIT = MAX_CHUNK_BYTES;
export const DEFAULT_INITIAL_WINDOW = 256 * 1024;
export const DEFAULT_MAX_CONCURRENT_STREAMS = 2048;
/** How far a bulk stream's window may grow. */
export const DEFAULT_MAX_STREAM_WINDOW = 4 * 1024 * 1024;
/** Window growth a session may grant across its streams when no budget is passed in. */
export const DEFAULT_SESSION_WINDOW_BUDGET = 8 * 1024 * 1024;
