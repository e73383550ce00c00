export {
  AgentRouter,
  type AgentRouterOptions,
  type LocalGateway,
  type RouteOpenInit,
} from './agent-router.js';
export { agentNotConnected } from './errors.js';
export { ForwardedStream, type ForwardTarget } from './forwarded-stream.js';
export {
  GATEWAY_CLIENT_WINDOW,
  type GatewayChannelOptionsInit,
  gatewayChannelOptions,
} from './gateway-channel-options.js';
