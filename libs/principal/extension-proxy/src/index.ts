export type { StreamOpener } from '@pullplane/http-front';
export { type Caller, type CallerAuthOptions, identifyCaller } from './caller.js';
export {
  EXTENSION_PROXY_FAILURES,
  type ExtensionProxyErrorName,
  ExtensionProxyErrors,
  type ExtensionProxyFailure,
  extensionProxyAnswer,
} from './errors.js';
export {
  createExtensionProxy,
  type ExtensionProxy,
  type ExtensionProxyOptions,
  type ExtensionProxyTls,
} from './extension-proxy.js';
export {
  createExtensionProxyService,
  EXTENSION_PROXY_AUDIENCE,
  type ExtensionProxyService,
  type ExtensionProxyServiceDeps,
} from './extension-proxy-service.js';
export { validateExtensionProxyConfig } from './service-checks.js';
export {
  type ExtensionProxyServiceConfig,
  type ExtensionProxyServiceFlags,
  extensionProxyServiceOptions,
} from './service-options.js';
export {
  CLUSTER_NAME_HEADER,
  CLUSTER_URL_HEADER,
  type ExtensionRequest,
  type ExtensionTarget,
  resolveExtensionTarget,
} from './target.js';
