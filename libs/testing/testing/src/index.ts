export {
  ARGOCD_AGENT_AGENT_ENV,
  ARGOCD_AGENT_AGENT_NAME_LABEL,
  ARGOCD_AGENT_AGENT_PARAMS,
  ARGOCD_AGENT_PRINCIPAL_ENV,
  ARGOCD_AGENT_PRINCIPAL_PARAMS,
  ARGOCD_AGENT_SELF_REGISTERED_LABEL,
  type ArgocdAgentSecrets,
  argocdAgentAgentManifests,
  argocdAgentPrincipalManifests,
  argocdAgentResourceProxyToken,
  argocdAgentSecrets,
  envFromParams,
  type Manifest,
  manifestsToYaml,
} from './argocd-agent/install.js';
export {
  type ArgoClusterSecret,
  type ArgoTerminal,
  type ArgoTerminalOptions,
  openArgoTerminal,
} from './argocd-terminal.js';
export {
  AGENT_SERVICE_ACCOUNT_USER,
  addCustomResource,
  buildKubeconfig,
  type CustomResourceOptions,
  downloadPattern,
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
  type FakeKubeStore,
  type FakeKubeTlsOptions,
  type FaultAction,
  type FaultHook,
  type FaultRequest,
  FULL_ACCESS_RULES,
  httpGet,
  type KubeconfigOptions,
  type KubectlOptions,
  type KubectlResult,
  type KubectlStream,
  type KubeObject,
  kubectlInvocation,
  kubectlOnTerminal,
  liveBytes,
  type ObjectRef,
  type PodPortTarget,
  type PolicyRule,
  patternByte,
  type RequestLog,
  runKubectl,
  type SeedArgoDemoOptions,
  type SeededApp,
  type SeededArgoDemo,
  StatusError,
  type StreamSession,
  seedArgoDemo,
  spawnKubectl,
  startFakeKubeApiServer,
  type TerminalKubectl,
  type TerminalSize,
} from './kube/index.js';
export { type AppProcess, spawnAppProcess } from './launchers/app-process.js';
export { builtAppMain } from './launchers/built-app.js';
export { freePort, freePortRange, freePorts } from './launchers/free-port.js';
export {
  DEPLOY_NATS_CONFIG_DIR,
  type LockedNatsServer,
  type LockedNatsServerOptions,
  NATS_ROLES,
  type NatsRole,
  startLockedNatsServer,
} from './launchers/locked-nats-server.js';
export {
  type NatsClusterHandle,
  type NatsClusterOptions,
  startNatsCluster,
} from './launchers/nats-cluster.js';
export { type NatsServerHandle, type NatsServerOptions, startNatsServer } from './launchers/nats-server.js';
export {
  findBinary,
  makeTempDir,
  releaseTestResources,
  trackedProcessCount,
} from './launchers/processes.js';
export {
  type RedisServerHandle,
  type RedisServerOptions,
  startRedisServer,
} from './launchers/redis-server.js';
export {
  type AttributeValue,
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from './otlp-receiver.js';
export { createTestPki, type ForeignCa, type TestPki, type TestPkiFiles } from './pki/test-pki.js';
export { RawHttpConnection, type RawHttpResponse } from './raw-http.js';
export { dialRawAgent, type RawTunnelAgent, type RawTunnelAgentOptions } from './raw-tunnel-agent.js';
export { redisWireReplies } from './redis-wire.js';
export { type SlowHop, startSlowHop } from './slow-hop.js';
export { startTcpBalancer, type TcpBalancer } from './tcp-balancer.js';
export { waitFor } from './wait-for.js';
