export {
  AgentRouter,
  type AgentRouterOptions,
  type LocalGateway,
  type RouteOpenInit,
} from './agent-router.js';
export { agentNotConnected } from './errors.js';
export { ForwardedStream, type ForwardTarget } from './forwarded-stream.js';
export {
  createProxyReplica,
  type ListeningProxy,
  type ProxyReplica,
  type ProxyReplicaDeps,
  type ProxyReplicaFlags,
} from './proxy-replica.js';
export { type GatewayClientFlags, gatewayCredentials, startRouterFromFlags } from './router-from-flags.js';
