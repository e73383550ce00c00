export {
  fromTunnelError,
  ProxyError,
  type ProxyErrorName,
  type ProxyFailure,
  ResourceProxyErrors,
  statusBody,
} from './errors.js';
export { agentServerUrl, type KubeconfigEntry, renderKubeconfig } from './kubeconfig.js';
export { type CallerAuthOptions, checkPath, type ResolvedTarget, resolveTarget } from './request-target.js';
export {
  createResourceProxy,
  type ResourceProxy,
  type ResourceProxyOptions,
  type ResourceProxyTls,
  type StreamOpener,
} from './resource-proxy.js';
