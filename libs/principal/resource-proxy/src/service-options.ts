import { natsOptions } from '@pullplane/bus';
import { defineOptions, type InferConfig } from '@pullplane/config';
import { gatewayClientOptions, type ProxyReplicaFlags } from '@pullplane/proxy-replica';
import { principalSecretAccessOptions, principalTlsProtocolOptions } from '@pullplane/tls-material';

/**
 * The resource proxy service's flags (env ARGOCD_PRINCIPAL_*, params keys principal.resource-proxy.*):
 * what `createResourceProxyService` reads. The program adds its own (tracing, drain, ops ports,
 * log level) in apps/resource-proxy.
 */
export const resourceProxyServiceOptions = defineOptions([
  ...natsOptions,
  {
    flag: 'enable-resource-proxy',
    type: 'boolean',
    default: true,
    env: 'ARGOCD_PRINCIPAL_ENABLE_RESOURCE_PROXY',
    paramsKey: 'principal.resource-proxy.enable',
    description: 'Run the resource proxy. When false the service says so and exits 0.',
  },
  {
    flag: 'listen-host',
    type: 'string',
    default: '0.0.0.0',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_LISTEN_HOST',
    paramsKey: 'principal.resource-proxy.listen.host',
    description: 'Address Argo CD and kubectl connect to. Behind a mesh sidecar: 127.0.0.1.',
  },
  {
    flag: 'listen-port',
    type: 'port',
    default: 9090,
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_LISTEN_PORT',
    paramsKey: 'principal.resource-proxy.listen.port',
    description: 'Port of the Kubernetes API front.',
  },
  {
    flag: 'resource-proxy-cert-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CERT_PATH',
    paramsKey: 'principal.resource-proxy.tls.cert-path',
    description: 'Server certificate (PEM).',
  },
  {
    flag: 'resource-proxy-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_KEY_PATH',
    paramsKey: 'principal.resource-proxy.tls.key-path',
    description: 'Private key (PEM) of the server certificate.',
  },
  {
    flag: 'resource-proxy-ca-path',
    type: 'file',
    env: ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_CA_PATH', 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CA_PATH'],
    paramsKey: 'principal.resource-proxy.ca.path',
    description:
      'CA that caller certificates must chain to (one per agent: CN = agent name, issued by `pullplane kubeconfig`).',
  },
  {
    flag: 'resource-proxy-secret-name',
    type: 'string',
    default: 'argocd-agent-resource-proxy-tls',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_SECRET_NAME',
    paramsKey: 'principal.resource-proxy.secret-name',
    description:
      'Secret (tls.crt, tls.key) with the server certificate when --resource-proxy-cert-path and --resource-proxy-key-path are not given; watched.',
  },
  {
    flag: 'resource-proxy-ca-secret-name',
    type: 'string',
    default: 'argocd-agent-ca',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_CA_SECRET_NAME',
    paramsKey: 'principal.resource-proxy.ca.secret-name',
    description:
      'Secret whose ca.crt and tls.crt (never tls.key) verify caller certificates when --resource-proxy-ca-path is not given; absent: certificates are refused, tokens still work.',
  },
  ...principalTlsProtocolOptions,
  {
    flag: 'token-key-path',
    aliases: 'jwt-key',
    type: 'file',
    env: ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_TOKEN_KEY_PATH', 'ARGOCD_PRINCIPAL_JWT_KEY_PATH'],
    paramsKey: ['principal.resource-proxy.token.key-path', 'principal.jwt.key-path'],
    description:
      'Key (PEM, private or public; ECDSA P-256 or RSA) that verifies caller bearer tokens (audience resource-proxy). Without it, the key is read from --jwt-secret-name.',
  },
  {
    flag: 'jwt-secret-name',
    type: 'string',
    default: 'argocd-agent-jwt',
    env: 'ARGOCD_PRINCIPAL_JWT_SECRET_NAME',
    paramsKey: 'principal.jwt.secret-name',
    description:
      'Secret whose jwt.key verifies caller tokens when --token-key-path is not given; absent: tokens are refused, certificates still work; watched.',
  },
  {
    flag: 'adopt-argocd-agent-clusters',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_ADOPT_ARGOCD_AGENT_CLUSTERS',
    paramsKey: 'principal.argocd-agent.adopt-clusters',
    description:
      'Also accept the bearer tokens argocd-agent put into its cluster Secrets (RS512, issuer argocd-agent-server, audience argocd-agent-server-resource-proxy), verified with the same key; each reaches the one agent it names. Their client certificates are never accepted as callers.',
  },
  ...principalSecretAccessOptions,
  {
    flag: 'insecure-plaintext',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_INSECURE_PLAINTEXT',
    paramsKey: 'principal.resource-proxy.tls.insecure-plaintext',
    description: 'Serve plaintext behind a mesh sidecar (loopback only); callers are identified by --auth.',
  },
  {
    flag: 'allow-insecure-non-loopback',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_ALLOW_INSECURE_NON_LOOPBACK',
    paramsKey: 'principal.resource-proxy.allow-insecure-non-loopback',
    description: 'Permit --insecure-plaintext on a non-loopback address.',
  },
  {
    flag: 'auth',
    type: 'string',
    default: 'mtls',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_AUTH',
    paramsKey: 'principal.resource-proxy.auth',
    description:
      'Caller authentication: mtls (client certificates, plus bearer tokens when --token-key-path is set), or a mesh identity header (header:<name>:<regex>, istio, linkerd) checked against --allowed-callers.',
  },
  {
    flag: 'mesh-trust-domain',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_MESH_TRUST_DOMAIN',
    paramsKey: 'principal.mesh.trust-domain',
    description: 'Trust domain of mesh identities (e.g. cluster.local); required by --auth=istio|linkerd.',
  },
  {
    flag: 'mesh-caller-namespaces',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_MESH_CALLER_NAMESPACES',
    paramsKey: 'principal.resource-proxy.mesh.caller-namespaces',
    description:
      "Namespaces of the callers (Argo CD's); --auth=istio|linkerd admits only their service accounts.",
  },
  {
    flag: 'allowed-callers',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_ALLOWED_CALLERS',
    paramsKey: 'principal.resource-proxy.allowed-callers',
    description: 'Mesh identities (e.g. the Argo CD server service account) allowed to reach every agent.',
  },
  {
    flag: 'impersonation-allowed-callers',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_IMPERSONATION_ALLOWED_CALLERS',
    paramsKey: 'principal.resource-proxy.impersonation.allowed-callers',
    description: 'Callers whose Impersonate-* headers are forwarded (all others are stripped).',
  },
  ...gatewayClientOptions('resource-proxy'),
  {
    flag: 'request-timeout',
    type: 'duration',
    default: '10s',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_REQUEST_TIMEOUT',
    paramsKey: 'principal.resource-proxy.request-timeout',
    description:
      'Non-streaming requests without an answer by then get 504; one whose body is still coming then is cut, as the API server cuts its own.',
  },
  {
    flag: 'max-request-body',
    type: 'int',
    default: 10485760,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_MAX_REQUEST_BODY',
    paramsKey: 'principal.resource-proxy.max-request-body',
    description: 'Largest request body in bytes; larger ones get 413.',
  },
]);

/** The service's flags, parsed. */
export type ResourceProxyServiceFlags = InferConfig<typeof resourceProxyServiceOptions>;

/** What the service reads: its flags, and the drain and ops ports of the process it runs in. */
export type ResourceProxyServiceConfig = ResourceProxyServiceFlags &
  Pick<ProxyReplicaFlags, 'drainTimeout' | 'healthzPort' | 'metricsPort'>;
