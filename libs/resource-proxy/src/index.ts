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
