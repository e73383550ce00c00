export { clientNode, clientNodeLoaded } from './client-node.js';
export { MaterialError, MaterialErrorCode, MaterialErrors } from './errors.js';
export { FILE_WATCH_DEBOUNCE_MS, watchFiles } from './file-watch.js';
export { type KubeAccessOptions, kubeApiConfigured, loadKubeAccess } from './kube-access.js';
export {
  currentListenerTls,
  type FollowedMaterial,
  followListenerMaterial,
  type ListenerMaterial,
  type RotatingTls,
} from './listener-material.js';
export { type ListenerTls, listenerSecureContext } from './listener-tls.js';
export { observeMaterials } from './material-metrics.js';
export {
  caBundle,
  certificatesIn,
  earliestNotAfter,
  type KeyPair,
  keyPair,
  keyPem,
} from './material-parsers.js';
export { type MaterialSet, type OpenedMaterials, openMaterials } from './material-set.js';
export {
  caBundleSpec,
  keyPairSpec,
  type Material,
  type MaterialSpec,
  openMaterial,
  SecretStore,
  secretKey,
  signingKeySpec,
} from './material-source.js';
export { principalSecretAccessOptions } from './secret-access-options.js';
export { apiStatus, type SecretData, SecretWatch, type SecretWatchOptions } from './secret-watch.js';
export { agentTlsProtocolOptions, principalTlsProtocolOptions } from './tls-options.js';
export {
  TLS_VERSION_NAMES,
  type TlsProtocolInput,
  type TlsProtocolSettings,
  type TlsVersionName,
  tlsProtocolSettings,
} from './tls-protocol.js';
