import { natsOptions } from '@pullplane/bus';
import { defineOptions, type InferConfig } from '@pullplane/config';
import type { OpsFlags } from '@pullplane/service';
import { principalTlsProtocolOptions } from '@pullplane/tls-material';
import { principalTracingOptions } from '@pullplane/tracing';
import { DEFAULT_AGENT_LIMITS, MAX_AGENT_RESPONSE_HEADER_BYTES } from './agent-limits.js';

/**
 * The stream gateway service's flags, env ARGOCD_PRINCIPAL_*, params keys principal.* as in
 * argocd-agent; its main adds the ops flags (`opsOptions`).
 */
export const gatewayServiceOptions = defineOptions([
  ...natsOptions,
  {
    flag: 'listen-host',
    type: 'string',
    default: '0.0.0.0',
    env: 'ARGOCD_PRINCIPAL_LISTEN_HOST',
    paramsKey: 'principal.listen.host',
    description: 'Address agents connect to. Behind a mesh sidecar: 127.0.0.1.',
  },
  {
    flag: 'listen-port',
    type: 'port',
    default: 8443,
    env: 'ARGOCD_PRINCIPAL_LISTEN_PORT',
    paramsKey: 'principal.listen.port',
    description: 'Port agents connect to.',
  },
  {
    flag: 'tls-cert',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_TLS_SERVER_CERT_PATH',
    paramsKey: 'principal.tls.server.cert-path',
    description: 'Server certificate (PEM) for the agent and internal listeners.',
  },
  {
    flag: 'tls-key',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_TLS_SERVER_KEY_PATH',
    paramsKey: 'principal.tls.server.key-path',
    description: 'Private key (PEM) of --tls-cert.',
  },
  {
    flag: 'root-ca-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_TLS_SERVER_ROOT_CA_PATH',
    paramsKey: 'principal.tls.server.root-ca-path',
    description: 'CA bundle that agent (and proxy) client certificates must chain to.',
  },
  {
    flag: 'tls-secret-name',
    type: 'string',
    default: 'argocd-agent-principal-tls',
    env: 'ARGOCD_PRINCIPAL_TLS_SECRET_NAME',
    paramsKey: 'principal.tls.secret-name',
    description:
      'Secret (tls.crt, tls.key) with the server certificate when --tls-cert and --tls-key are not given; watched, a rotation applies to new connections.',
  },
  {
    flag: 'tls-ca-secret-name',
    type: 'string',
    default: 'argocd-agent-ca',
    env: 'ARGOCD_PRINCIPAL_TLS_SERVER_ROOT_CA_SECRET_NAME',
    paramsKey: 'principal.tls.server.root-ca-secret-name',
    description:
      'Secret whose ca.crt and tls.crt (never tls.key) are the CA bundle when --root-ca-path is not given; watched.',
  },
  ...principalTlsProtocolOptions,
  ...principalTracingOptions,
  {
    flag: 'insecure-plaintext',
    type: 'boolean',
    env: ['ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT', 'ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT'],
    paramsKey: 'principal.tls.insecure-plaintext',
    description: 'Serve without TLS, behind a mesh sidecar that terminates mTLS. Requires header auth.',
  },
  {
    flag: 'allow-insecure-non-loopback',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_ALLOW_INSECURE_NON_LOOPBACK',
    paramsKey: 'principal.tls.allow-insecure-non-loopback',
    description:
      'Permit --insecure-plaintext on a non-loopback address (anyone reaching it can forge identity headers).',
  },
  {
    flag: 'auth',
    type: 'string',
    default: 'mtls',
    env: 'ARGOCD_PRINCIPAL_AUTH',
    paramsKey: 'principal.auth',
    description:
      'How agents authenticate: mtls | mtls:<subject regex> | mtls:uri:<regex> | header:<name>:<regex> | istio | linkerd | token.',
  },
  {
    flag: 'allow-legacy-agent-certs',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_ALLOW_LEGACY_AGENT_CERTS',
    paramsKey: 'principal.tls.client-cert.allow-legacy',
    description:
      "Also accept agent certificates that carry no credential kind (argocd-agent's, CN = agent name). They cannot be told apart from caller certificates of the same CA: for migrations only.",
  },
  {
    flag: 'mesh-trust-domain',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_MESH_TRUST_DOMAIN',
    paramsKey: 'principal.mesh.trust-domain',
    description:
      'Trust domain of mesh identities (Istio: spiffe://<domain>/…; Linkerd: …identity.linkerd.<domain>), e.g. cluster.local. Required by --auth=istio|linkerd and --internal-auth=istio|linkerd.',
  },
  {
    flag: 'mesh-agent-namespaces',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_MESH_AGENT_NAMESPACES',
    paramsKey: 'principal.mesh.agent-namespaces',
    description:
      'Namespaces agents run in on the workload clusters; --auth=istio|linkerd admits only their service accounts.',
  },
  {
    flag: 'token-key-path',
    aliases: 'jwt-key',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_JWT_KEY_PATH',
    paramsKey: 'principal.jwt.key-path',
    description:
      'PEM private key that signs agent tokens for --auth=token: ECDSA P-256 (ES256) or RSA (RS512, as argocd-agent). Without it, the key is read from --jwt-secret-name.',
  },
  {
    flag: 'jwt-secret-name',
    type: 'string',
    default: 'argocd-agent-jwt',
    env: 'ARGOCD_PRINCIPAL_JWT_SECRET_NAME',
    paramsKey: 'principal.jwt.secret-name',
    description:
      'Secret whose jwt.key signs agent tokens (--auth=token) and the tokens in cluster Secrets when --token-key-path / --registration-token-key-path are not given; watched.',
  },
  {
    flag: 'argocd-namespace',
    aliases: 'namespace',
    type: 'string',
    default: 'argocd',
    env: 'ARGOCD_PRINCIPAL_NAMESPACE',
    paramsKey: 'principal.namespace',
    description:
      'Namespace of Argo CD, where agents are registered as cluster Secrets and TLS material is read from Secrets.',
  },
  {
    flag: 'resource-proxy-url',
    type: 'url',
    schemes: ['https', 'http'],
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_URL',
    paramsKey: 'principal.resource-proxy.url',
    description:
      'Resource proxy URL Argo CD should use (e.g. https://argocd-agent-resource-proxy.argocd.svc:9090). When set, each agent is registered as an Argo CD cluster on first connect.',
  },
  {
    flag: 'enable-self-cluster-registration',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_ENABLE_SELF_CLUSTER_REGISTRATION',
    paramsKey: 'principal.registration.enable',
    description:
      "argocd-agent's switch for cluster registration: as setting --resource-proxy-url to https://<--resource-proxy-address>.",
  },
  {
    flag: 'resource-proxy-address',
    type: 'host-port',
    default: 'argocd-agent-resource-proxy:9090',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_ADDRESS',
    paramsKey: 'principal.resource-proxy.address',
    description:
      "host:port of the resource proxy for --enable-self-cluster-registration (argocd-agent's form of --resource-proxy-url).",
  },
  {
    flag: 'adopt-argocd-agent-clusters',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_ADOPT_ARGOCD_AGENT_CLUSTERS',
    paramsKey: 'principal.argocd-agent.adopt-clusters',
    description:
      "Take over the cluster Secrets argocd-agent wrote (label argocd-agent.argoproj-labs.io/agent-name) as each agent connects: name and server stay, the credentials become a caller token; argocd-agent's client certificate is removed. Needs cluster registration.",
  },
  {
    flag: 'registration-token-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_REGISTRATION_TOKEN_KEY_PATH',
    paramsKey: 'principal.registration.token-key-path',
    description:
      "Private key (ECDSA P-256 or RSA) that signs the bearer tokens put into cluster Secrets (the resource proxy's --token-key-path). Without it, the key is read from --jwt-secret-name.",
  },
  {
    flag: 'registration-token-ttl',
    type: 'duration',
    default: '24h',
    min: '10m',
    env: 'ARGOCD_PRINCIPAL_REGISTRATION_TOKEN_TTL',
    paramsKey: 'principal.registration.token-ttl',
    description:
      'Lifetime of the bearer tokens in cluster Secrets; the gateway holding the agent rewrites the Secret when a third of it is left.',
  },
  {
    flag: 'registration-ca-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_REGISTRATION_CA_PATH',
    paramsKey: 'principal.registration.ca-path',
    description: "CA that verifies the resource proxy's certificate (caData in cluster Secrets).",
  },
  {
    flag: 'kubeconfig',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_KUBECONFIG',
    paramsKey: 'principal.kubeconfig',
    description: 'Kubeconfig for the control-plane cluster (default: in-cluster, then $KUBECONFIG).',
  },
  {
    flag: 'kubecontext',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_KUBECONTEXT',
    paramsKey: 'principal.kubecontext',
    description: 'Context of --kubeconfig to use (default: its current context).',
  },
  {
    flag: 'internal-listen-host',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_INTERNAL_LISTEN_HOST',
    paramsKey: 'principal.internal.listen.host',
    description: 'Address of the internal listener (default: --listen-host).',
  },
  {
    flag: 'internal-listen-port',
    type: 'port',
    default: 8444,
    env: 'ARGOCD_PRINCIPAL_INTERNAL_LISTEN_PORT',
    paramsKey: 'principal.internal.listen.port',
    description: 'Where proxy replicas reach this gateway.',
  },
  {
    flag: 'internal-auth',
    type: 'string',
    default: 'mtls',
    env: 'ARGOCD_PRINCIPAL_INTERNAL_AUTH',
    paramsKey: 'principal.internal.auth',
    description:
      'How proxy replicas authenticate on the internal listener: mtls (proxy certificates) or a mesh identity header (same forms as --auth, except token). Plaintext needs a header form.',
  },
  {
    flag: 'internal-allowed-clients',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_INTERNAL_ALLOWED_CLIENTS',
    paramsKey: 'principal.internal.allowed-clients',
    description:
      'Proxies allowed on the internal listener, checked on every call: proxy certificate names (mTLS; empty: any proxy certificate) or service accounts (mesh; required).',
  },
  {
    flag: 'internal-mesh-namespaces',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_INTERNAL_MESH_NAMESPACES',
    paramsKey: 'principal.internal.mesh-namespaces',
    description:
      'Namespaces the proxies run in; --internal-auth=istio|linkerd admits only their service accounts.',
  },
  {
    flag: 'advertise-address',
    type: 'string',
    env: ['ARGOCD_PRINCIPAL_ADVERTISE_ADDRESS', 'POD_IP'],
    paramsKey: 'principal.advertise-address',
    description: 'Host other replicas use to reach the internal listener (default: the pod IP).',
  },
  {
    flag: 'max-chunk-size',
    type: 'int',
    default: 65536,
    min: 4096,
    max: 1048576,
    env: 'ARGOCD_PRINCIPAL_MAX_CHUNK_SIZE',
    paramsKey: 'principal.tunnel.max-chunk-size',
    description: 'Largest body chunk on the tunnel, in bytes (64 KiB to 1 MiB recommended).',
  },
  {
    flag: 'stream-window',
    type: 'int',
    default: 262144,
    min: 65536,
    max: 16777216,
    env: 'ARGOCD_PRINCIPAL_STREAM_WINDOW',
    paramsKey: 'principal.tunnel.stream-window',
    description: 'Credit per logical stream: bytes in flight before the reader must catch up.',
  },
  {
    flag: 'tunnel-window-budget',
    type: 'int',
    default: 268435456,
    min: 0,
    max: 17179869184,
    env: 'ARGOCD_PRINCIPAL_TUNNEL_WINDOW_BUDGET',
    paramsKey: 'principal.tunnel.window-budget',
    description:
      'Bytes of credit bulk streams may grow beyond --stream-window, across all agents of this gateway (each agent also within 8 MiB); 0 turns growth off.',
  },
  {
    flag: 'relay-budget',
    type: 'int',
    default: 67108864,
    min: 65536,
    max: 17179869184,
    env: 'ARGOCD_PRINCIPAL_RELAY_BUDGET',
    paramsKey: 'principal.tunnel.relay-budget',
    description:
      "Bytes of relayed streams the gateway holds at once across all agents: bytes waiting in transport queues and credit passed on to senders. Credit beyond each stream's initial window is passed on only while there is room, so senders are slowed, not refused; a stream is reset only if its own initial window would take the bytes queued past the limit.",
  },
  {
    flag: 'relay-budget-per-agent',
    type: 'int',
    default: DEFAULT_AGENT_LIMITS.relayShareBytes,
    min: 65536,
    max: 17179869184,
    env: 'ARGOCD_PRINCIPAL_RELAY_BUDGET_PER_AGENT',
    paramsKey: 'principal.tunnel.relay-budget-per-agent',
    description:
      "Each agent's share of --relay-budget: bytes of its streams waiting in transport queues plus credit passed on to their senders. Credit beyond a stream's initial window is held back while the share is full and passed on as bytes are written, so a burst is slowed, not refused, and one agent that stops reading cannot take the memory others' streams need; a sender going beyond the credit it was given is reset.",
  },
  {
    flag: 'agent-max-response-headers',
    type: 'int',
    default: DEFAULT_AGENT_LIMITS.head.maxHeaders,
    min: 1,
    max: 65536,
    env: 'ARGOCD_PRINCIPAL_AGENT_MAX_RESPONSE_HEADERS',
    paramsKey: 'principal.tunnel.agent-max-response-headers',
    description:
      'Headers one response from an agent may carry; a response with more is reset (a protocol violation).',
  },
  {
    flag: 'agent-max-response-header-bytes',
    type: 'int',
    default: DEFAULT_AGENT_LIMITS.head.maxHeaderBytes,
    min: 1024,
    max: MAX_AGENT_RESPONSE_HEADER_BYTES,
    env: 'ARGOCD_PRINCIPAL_AGENT_MAX_RESPONSE_HEADER_BYTES',
    paramsKey: 'principal.tunnel.agent-max-response-header-bytes',
    description:
      'Characters of header names and values one response from an agent may carry; a response with more is reset (a protocol violation).',
  },
  {
    flag: 'agent-max-violations',
    type: 'int',
    default: DEFAULT_AGENT_LIMITS.maxViolations,
    min: 1,
    max: 1000000,
    env: 'ARGOCD_PRINCIPAL_AGENT_MAX_VIOLATIONS',
    paramsKey: 'principal.tunnel.agent-max-violations',
    description:
      'Tunnel protocol violations (oversized frames, credit overruns, frames after the end or for streams never opened) an agent may commit within --agent-violation-window; one more closes its tunnel with a security event. Each violation resets only the stream concerned.',
  },
  {
    flag: 'agent-violation-window',
    type: 'duration',
    default: '1m',
    env: 'ARGOCD_PRINCIPAL_AGENT_VIOLATION_WINDOW',
    paramsKey: 'principal.tunnel.agent-violation-window',
    description: 'The window over which --agent-max-violations counts.',
  },
  {
    flag: 'drain-timeout',
    type: 'duration',
    default: '30s',
    env: 'ARGOCD_PRINCIPAL_DRAIN_TIMEOUT',
    paramsKey: 'principal.drain-timeout',
    description: 'On SIGTERM, how long in-flight streams may finish after agents were told to move.',
  },
  {
    flag: 'presence-ttl',
    type: 'duration',
    default: '90s',
    min: '10s',
    env: 'ARGOCD_PRINCIPAL_PRESENCE_TTL',
    paramsKey: 'principal.presence.ttl',
    description: 'Presence records expire this long after their last refresh.',
  },
]);

/** What `createGatewayService` reads: its flags, and its ops ports unless its ops are shared. */
export type GatewayServiceConfig = InferConfig<typeof gatewayServiceOptions> & OpsFlags;
