export {
  AgentRouter,
  type AgentRouterOptions,
  type LocalGateway,
  openInitOf,
  type RouteOpenInit,
} from './agent-router.js';
export { agentNotConnected } from './errors.js';
export {
  type GatewayClientInit,
  GatewayLink,
  type GatewayLinkOptions,
  gatewayClient,
} from './gateway-link.js';
export { LinkStream, type Route, type UnroutedHandler } from './link-stream.js';
