export {
  type AgentLimits,
  DEFAULT_AGENT_LIMITS,
  MAX_AGENT_RESPONSE_HEADER_BYTES,
  ViolationCounter,
} from './agent-limits.js';
export { AgentSession, type AgentSessionInfo } from './agent-session.js';
export {
  type AuthenticatorDeps,
  agentAuthenticator,
  type InternalAuth,
  internalAuthenticator,
} from './authenticators.js';
export type { Authenticator, AuthOutcome, CallContext, ConnectionLookup } from './caller-auth.js';
export { type CallEnd, FrameCall } from './frame-call.js';
export { defaultGatewayId, Gateway, type GatewayOptions, type ListenerConfig } from './gateway.js';
export {
  agentAuthMethod,
  gatewayStartupWarnings,
  internalAuthMethod,
  validateGatewayConfig,
} from './gateway-config.js';
export { type GatewayServiceConfig, gatewayServiceOptions } from './gateway-options.js';
export { createGatewayService, type GatewayService, type GatewayServiceDeps } from './gateway-service.js';
export { type GrpcListener, type ListenerTls, startGrpcListener } from './grpc-listener.js';
export {
  type FlappingEvent,
  type Replacement,
  ReplacementWatch,
  type ReplacementWatchOptions,
} from './replacement-watch.js';
export { SessionRegistry } from './session-registry.js';
