export { isDnsLabel, isDnsLabelBytes } from './dns-label.js';
export {
  HOP_BY_HOP_HEADERS,
  IDENTITY_REQUEST_HEADER_PREFIX,
  IDENTITY_REQUEST_HEADERS,
  isStrippedBackendResponseHeader,
  isStrippedRequestHeader,
  isStrippedResponseHeader,
  TRACE_CONTEXT_HEADERS,
} from './http-headers.js';
export { isLoopback } from './loopback.js';
