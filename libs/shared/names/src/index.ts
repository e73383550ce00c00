export { isDnsLabel, isDnsLabelBytes } from './dns-label.js';
export {
  HOP_BY_HOP_HEADERS,
  IDENTITY_REQUEST_HEADER_PREFIX,
  IDENTITY_REQUEST_HEADERS,
  IMPERSONATION_HEADER_PREFIX,
  isStrippedBackendResponseHeader,
  isStrippedExtensionRequestHeader,
  isStrippedRequestHeader,
  isStrippedResponseHeader,
  REQUEST_REWRITING_HEADERS,
  TRACE_CONTEXT_HEADERS,
} from './http-headers.js';
export { isLoopback } from './loopback.js';
