export type { StreamOpener } from '@pullplane/http-front';
export {
  ProxyError,
  type ProxyErrorName,
  type ProxyFailure,
  RESOURCE_PROXY_FAILURES,
  ResourceProxyErrors,
  resourceProxyAnswer,
} from './errors.js';
export { agentServerUrl, type KubeconfigEntry, renderKubeconfig } from './kubeconfig.js';
export { type CallerAuthOptions, type ResolvedTarget, resolveTarget } from './request-target.js';
export {
  createResourceProxy,
  type ResourceProxy,
  type ResourceProxyOptions,
  type ResourceProxyTls,
} from './resource-proxy.js';
export {
  createResourceProxyService,
  type ResourceProxyService,
  type ResourceProxyServiceDeps,
} from './resource-proxy-service.js';
export { resourceProxyStartupWarnings, validateResourceProxyConfig } from './service-checks.js';
export {
  type ResourceProxyServiceConfig,
  type ResourceProxyServiceFlags,
  resourceProxyServiceOptions,
} from './service-options.js';
