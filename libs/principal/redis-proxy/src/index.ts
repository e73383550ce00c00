export { type AgentOpener, type AgentReply, errorAsReply, tunnelFailure } from './agent-call.js';
export { AgentPipeline, type AgentPipelineOptions, AgentPipelines } from './agent-pipeline.js';
export { AgentSubscriptions, type AgentSubscriptionsOptions } from './agent-subscriptions.js';
export { BufferBudget } from './buffer-budget.js';
export { type CommandRoute, routeCommand, type SplitPart } from './command-routing.js';
export type { AgentRouting, CommandSpec, KeySpec, Policy } from './commands/spec.js';
export { COMMANDS, DEFAULT_ALLOWED_COMMANDS, validateAllowedCommands } from './commands/table.js';
export { RedisProxyError, RedisProxyErrorCode, RedisProxyErrors, ReplyText } from './errors.js';
export { DEFAULT_AGENT_KEY_PREFIXES, type KeyRoute, KeyRouter, validateKeyPrefixes } from './key-routing.js';
export { REPORTED_REDIS_VERSION } from './local-commands.js';
export { DEFAULT_LIMITS, type LimitName, type ProxyLimits } from './proxy-context.js';
export {
  createRedisProxy,
  type RedisProxy,
  type RedisProxyOptions,
  type RedisProxyTls,
} from './redis-proxy.js';
export {
  callerCertificatesOnly,
  listenerTlsSource,
  redisPassword,
  redisProxyMaterialProblems,
} from './redis-proxy-material.js';
export { type RedisProxyServiceConfig, redisProxyServiceOptions } from './redis-proxy-options.js';
export {
  createRedisProxyService,
  type RedisProxyService,
  type RedisProxyServiceDeps,
  validateRedisProxyConfig,
} from './redis-proxy-service.js';
