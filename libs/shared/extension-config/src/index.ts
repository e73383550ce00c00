export {
  type AgentExtension,
  type AgentExtensionMap,
  type ExtensionHeader,
  isReservedHeaderName,
  parseAgentExtensionMap,
} from './agent-extension-map.js';
export {
  type ArgocdExtension,
  type ArgocdExtensionConfig,
  type ArgocdExtensionService,
  parseArgocdExtensionConfig,
} from './argocd-extension-config.js';
export {
  type BackendOptions,
  DEFAULT_BACKEND_OPTIONS,
  EXTENSION_NAME,
  isExtensionName,
} from './backend-options.js';
