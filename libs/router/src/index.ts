export { AgentRouter, type AgentRouterOptions, type LocalGateway, type RouteOpenInit } from './agent-router.js';
export { agentNotConnected } from './errors.js';
export { type ForwardTarget, ForwardedStream } from './forwarded-stream.js';
