import { natsOptions } from '@pullplane/bus';
import { defineOptions, type InferConfig } from '@pullplane/config';
import { gatewayClientOptions, type ProxyReplicaFlags } from '@pullplane/proxy-replica';
import { principalSecretAccessOptions, principalTlsProtocolOptions } from '@pullplane/tls-material';

/**
 * The extension proxy service's flags (env ARGOCD_PRINCIPAL_EXTENSION_PROXY_*, params keys
 * principal.extension-proxy.*): what `createExtensionProxyService` reads. The program adds its
 * own (tracing, drain, ops ports, log level) in apps/extension-proxy.
 */
export const extensionProxyServiceOptions = defineOptions([
  ...natsOptions,
  {
    flag: 'listen-host',
    type: 'string',
    default: '0.0.0.0',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_LISTEN_HOST',
    paramsKey: 'principal.extension-proxy.listen.host',
    description: 'Address the Argo CD server connects to. Behind a mesh sidecar: 127.0.0.1.',
  },
  {
    flag: 'listen-port',
    type: 'port',
    default: 8090,
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_LISTEN_PORT',
    paramsKey: 'principal.extension-proxy.listen.port',
    description: "Port of the extension proxy (the URL in Argo CD's extension.config).",
  },
  {
    flag: 'tls-cert-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_TLS_CERT_PATH',
    paramsKey: 'principal.extension-proxy.tls.cert-path',
    description: 'Server certificate (PEM).',
  },
  {
    flag: 'tls-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_TLS_KEY_PATH',
    paramsKey: 'principal.extension-proxy.tls.key-path',
    description: 'Private key (PEM) of the server certificate.',
  },
  {
    flag: 'tls-secret-name',
    type: 'string',
    default: 'pullplane-extension-proxy-tls',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_TLS_SECRET_NAME',
    paramsKey: 'principal.extension-proxy.tls.secret-name',
    description:
      'Secret (tls.crt, tls.key) with the server certificate when --tls-cert-path and --tls-key-path are not given; watched.',
  },
  {
    flag: 'client-ca-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_CLIENT_CA_PATH',
    paramsKey: 'principal.extension-proxy.client-ca.path',
    description:
      "CA the Argo CD server's client certificate must chain to (a caller certificate: `pullplane cert create argocd-server --kind caller --ca-dir ./pki`).",
  },
  {
    flag: 'client-ca-secret-name',
    type: 'string',
    default: 'argocd-agent-ca',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_CLIENT_CA_SECRET_NAME',
    paramsKey: 'principal.extension-proxy.client-ca.secret-name',
    description:
      'Secret whose ca.crt (and tls.crt, never tls.key) verifies client certificates when --client-ca-path is not given; watched.',
  },
  ...principalTlsProtocolOptions,
  ...principalSecretAccessOptions,
  {
    flag: 'insecure-plaintext',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_INSECURE_PLAINTEXT',
    paramsKey: 'principal.extension-proxy.tls.insecure-plaintext',
    description: 'Serve plaintext behind a mesh sidecar (loopback only); the caller is identified by --auth.',
  },
  {
    flag: 'allow-insecure-non-loopback',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_ALLOW_INSECURE_NON_LOOPBACK',
    paramsKey: 'principal.extension-proxy.allow-insecure-non-loopback',
    description: 'Permit --insecure-plaintext on a non-loopback address.',
  },
  {
    flag: 'auth',
    type: 'string',
    default: 'mtls',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_AUTH',
    paramsKey: 'principal.extension-proxy.auth',
    description:
      'How the Argo CD server is recognised: mtls (a caller certificate whose CN is on --allowed-callers), or a mesh identity header (header:<name>:<regex>, istio, linkerd) on --allowed-callers.',
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
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_MESH_CALLER_NAMESPACES',
    paramsKey: 'principal.extension-proxy.mesh.caller-namespaces',
    description:
      "Namespaces of the callers (Argo CD's); --auth=istio|linkerd admits only their service accounts.",
  },
  {
    flag: 'allowed-callers',
    type: 'list',
    default: ['argocd-server'],
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_ALLOWED_CALLERS',
    paramsKey: 'principal.extension-proxy.allowed-callers',
    description:
      'Identities of the Argo CD server (certificate CN, or mesh service account): nobody else may call.',
  },
  {
    flag: 'token-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_TOKEN_KEY_PATH',
    paramsKey: 'principal.extension-proxy.token.key-path',
    description:
      "Key (PEM, private or public) that verifies bearer tokens (audience extension-proxy) whose subject is on --allowed-callers: Argo CD sends one as the extension's Authorization header from argocd-secret (`pullplane extensions token`). Without it, tokens are refused.",
  },
  {
    flag: 'resource-proxy-url',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_URL',
    // The gateway's key: one entry says where registration points clusters and how we read them.
    paramsKey: 'principal.resource-proxy.url',
    description:
      "The resource proxy URL(s) cluster registration writes (the gateway's --resource-proxy-url, same params key): an Argocd-Target-Cluster-URL of <url>/clusters/<agent> (or argocd-agent's <url>?agentName=<agent>) picks that agent. Without it only Argocd-Target-Cluster-Name does.",
  },
  ...gatewayClientOptions('extension-proxy'),
  {
    flag: 'request-timeout',
    type: 'duration',
    default: '30s',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_REQUEST_TIMEOUT',
    paramsKey: 'principal.extension-proxy.request-timeout',
    description:
      'Requests without a response head (or 101) by then get 504; bodies may stream on for as long as they last.',
  },
  {
    flag: 'max-request-body',
    type: 'int',
    default: 10485760,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_MAX_REQUEST_BODY',
    paramsKey: 'principal.extension-proxy.max-request-body',
    description: 'Largest request body in bytes; larger ones get 413.',
  },
]);

/** The service's flags, parsed. */
export type ExtensionProxyServiceFlags = InferConfig<typeof extensionProxyServiceOptions>;

/** What the service reads: its flags, and the drain and ops ports of the process it runs in. */
export type ExtensionProxyServiceConfig = ExtensionProxyServiceFlags &
  Pick<ProxyReplicaFlags, 'drainTimeout' | 'healthzPort' | 'metricsPort'>;
