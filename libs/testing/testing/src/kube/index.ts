export {
  addCustomResource,
  BUILTIN_RESOURCES,
  type CustomResourceOptions,
  createBuiltinRegistry,
} from './builtin-resources.js';
export type {
  FakeKubeApiServer,
  FakeKubeApiServerOptions,
  FakeKubeTlsOptions,
  FaultAction,
  FaultHook,
  FaultRequest,
  RequestLog,
} from './fake-kube-api-server.js';
export { startFakeKubeApiServer } from './fake-kube-api-server.js';
export type { FakeKubeStore, StoreListFilter } from './fake-store.js';
export { buildKubeconfig, type KubeconfigOptions } from './kubeconfig.js';
export {
  type KubectlOptions,
  type KubectlResult,
  type KubectlStream,
  kubectlInvocation,
  runKubectl,
  spawnKubectl,
} from './kubectl.js';
export type { StoreEvent } from './object-store.js';
export type { CrdPrinterColumn } from './printer-columns.js';
export {
  AGENT_SERVICE_ACCOUNT_USER,
  FULL_ACCESS_RULES,
  type PolicyRule,
  type ResourceAttributes,
} from './rbac.js';
export {
  type PrinterColumn,
  ResourceRegistry,
  type ResourceType,
  type ResourceTypeInit,
} from './resource-registry.js';
export {
  INSTANCE_LABEL,
  type SeedArgoDemoOptions,
  type SeededApp,
  type SeededArgoDemo,
  seedArgoDemo,
  TRACKING_ANNOTATION,
} from './seed-argo-demo.js';
export { type KubeStatus, StatusError } from './status.js';
export {
  downloadPattern,
  httpGet,
  kubectlOnTerminal,
  liveBytes,
  type TerminalKubectl,
} from './stream-checks.js';
export { patternByte } from './streams/pod-http-server.js';
export type { PodPortTarget } from './streams/port-forward.js';
export type { TerminalSize } from './streams/process-io.js';
export type { StreamSession } from './streams/stream-sessions.js';
export type { KubeObject, ManagedFieldsEntry, ObjectMeta, ObjectRef, OwnerReference } from './types.js';
