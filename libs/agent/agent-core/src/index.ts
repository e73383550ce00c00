export { Agent, type AgentOptions } from './agent.js';
export { type AgentServiceConfig, agentServiceOptions } from './agent-options.js';
export {
  AGENT_VERSION,
  type AgentService,
  type AgentServiceDeps,
  createAgentFromConfig,
  createAgentService,
  ownName,
  validateAgentConfig,
} from './agent-service.js';
export {
  type ClusterAgentService,
  CREDENTIAL_EXPIRY_WARNING_MS,
  createClusterAgentService,
} from './cluster-agent/cluster-agent-service.js';
export {
  applyClusterAgent,
  CLUSTER_AGENT_GROUP,
  CLUSTER_AGENT_PLURAL,
  CLUSTER_AGENT_VERSION,
  type ClusterAgentObject,
  type ClusterAgentSpec,
} from './cluster-agent/cluster-agent-spec.js';
export {
  ClusterAgentStatus,
  type Condition,
  type ConditionType,
} from './cluster-agent/cluster-agent-status.js';
export { tokenExpiry } from './cluster-agent/token-expiry.js';
export { ExtensionError, type ExtensionErrorName, extensionStatus } from './extension-errors.js';
export { ExtensionExecutor, type ExtensionExecutorOptions } from './extension-executor.js';
export {
  ExtensionRegistry,
  type ExtensionRegistryOptions,
  type ExtensionSecretSource,
  type ResolvedHeaders,
  type ServedExtension,
} from './extension-registry.js';
export { KubeClient } from './kube-client.js';
export { createKubeForwarder, type KubeForwarder, type KubeForwarderOptions } from './kube-forwarder.js';
export { DEFAULT_EXEC_POLICY, type ExecPolicy, type SessionRecord } from './kube-sessions.js';
export { ManagedGate } from './managed-gate.js';
export { RedisExecutor, type RedisExecutorOptions } from './redis-executor.js';
export { type ConnectorEvents, TunnelConnector, type TunnelConnectorOptions } from './tunnel-connector.js';
