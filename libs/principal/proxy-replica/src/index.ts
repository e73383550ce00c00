export { gatewayClientOptions } from './gateway-client-options.js';
export {
  createProxyReplica,
  type ListeningProxy,
  type ProxyReplica,
  type ProxyReplicaDeps,
  type ProxyReplicaFlags,
} from './proxy-replica.js';
export {
  GATEWAY_CERT_REFRESH_MS,
  type GatewayClientFlags,
  type GatewayLinkFlags,
  gatewayClientProblems,
  gatewayCredentials,
  startRouterFromFlags,
} from './router-from-flags.js';
