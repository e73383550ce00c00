export {
  ADOPTED_ANNOTATION,
  ARGOCD_AGENT_AGENT_NAME_LABEL,
  adoptedClusterSecret,
  isAdopted,
  isArgocdAgentClusterSecret,
} from './argocd-agent-adoption.js';
export {
  ClusterRegistrar,
  type ClusterRegistrarOptions,
  type EnsureResult,
  type RemoveResult,
} from './cluster-registrar.js';
export {
  AGENT_LABEL,
  type ClusterCredentials,
  type ClusterSecretSpec,
  clusterSecret,
  EXPIRES_ANNOTATION,
  FINGERPRINT_ANNOTATION,
  fingerprint,
  isOurs,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SECRET_TYPE_LABEL,
  secretName,
} from './cluster-secret.js';
export { agentFromClusterServer, clusterServerUrl } from './cluster-server.js';
export { RegistrationError, RegistrationErrorCode, RegistrationErrors } from './errors.js';
