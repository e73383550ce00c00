export {
  AgentRouter,
  type AgentRouterOptions,
  type LocalGateway,
  type RouteOpenInit,
} from './agent-router.js';
export { agentNotConnected } from './errors.js';
export {
  GATEWAY_CLIENT_WINDOW,
  type GatewayChannelOptionsInit,
  gatewayChannelOptions,
} from './gateway-channel-options.js';
export { GatewayLink, type GatewayLinkOptions } from './gateway-link.js';
export { LinkStream, type Route, type UnroutedHandler } from './link-stream.js';
