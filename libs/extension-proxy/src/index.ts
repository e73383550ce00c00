export { type Caller, type CallerAuthOptions, identifyCaller } from './caller.js';
export {
  type ExtensionProxyErrorName,
  ExtensionProxyErrors,
  type ExtensionProxyFailure,
  failureBody,
  fromTunnelError,
} from './errors.js';
export {
  createExtensionProxy,
  type ExtensionProxy,
  type ExtensionProxyOptions,
  type ExtensionProxyTls,
  type StreamOpener,
} from './extension-proxy.js';
export {
  CLUSTER_NAME_HEADER,
  CLUSTER_URL_HEADER,
  type ExtensionTarget,
  resolveExtensionTarget,
} from './target.js';
