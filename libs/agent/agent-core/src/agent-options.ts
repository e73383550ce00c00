import { defineOptions, type InferConfig } from '@pullplane/config';
import type { OpsFlags } from '@pullplane/service';
import { agentTlsProtocolOptions } from '@pullplane/tls-material';
import { agentTracingOptions } from '@pullplane/tracing';

/**
 * The agent service's flags; env ARGOCD_AGENT_*, params keys agent.* as in argocd-agent; its
 * main adds the ops flags (`opsOptions`).
 */
export const agentServiceOptions = defineOptions([
  {
    flag: 'agent-name',
    type: 'string',
    pattern: /[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/,
    env: 'ARGOCD_AGENT_NAME',
    paramsKey: 'agent.name',
    description:
      "This agent's name. Optional: the gateway takes the name from the credentials and rejects a mismatch.",
  },
  {
    flag: 'server-address',
    type: 'string',
    env: 'ARGOCD_AGENT_REMOTE_SERVER',
    paramsKey: ['agent.server.address', 'agent.principal.address'],
    description:
      'Gateway host name or IP (usually the argocd-agent-principal Service). Required unless --cluster-agent names a ClusterAgent, whose spec.server.address wins.',
  },
  {
    flag: 'cluster-agent',
    type: 'string',
    pattern: /[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/,
    env: 'ARGOCD_AGENT_CLUSTER_AGENT',
    paramsKey: 'agent.cluster-agent',
    description:
      'Name of a ClusterAgent (pullplane.io/v1alpha1) in --namespace to run from: its spec (server, agent name, token, TLS, mesh) wins over these flags, which fill in the rest; the agent writes its status conditions and closes its tunnel while it is deleted.',
  },
  {
    flag: 'server-port',
    type: 'port',
    default: 8443,
    env: 'ARGOCD_AGENT_REMOTE_PORT',
    paramsKey: 'agent.server.port',
    description: 'Gateway port.',
  },
  {
    flag: 'creds',
    type: 'string',
    default: 'mtls:',
    env: 'ARGOCD_AGENT_CREDS',
    paramsKey: 'agent.creds',
    description:
      "How this agent proves its identity: mtls: (client certificate), header: (the mesh sidecar does it; plaintext), token:<file> (bearer token file, re-read on every connect). argocd-agent's userpass: is refused.",
  },
  {
    flag: 'tls-client-cert',
    type: 'file',
    env: 'ARGOCD_AGENT_TLS_CLIENT_CERT_PATH',
    paramsKey: 'agent.tls.client.cert-path',
    description: 'Client certificate (PEM) for mtls:.',
  },
  {
    flag: 'tls-client-key',
    type: 'file',
    env: 'ARGOCD_AGENT_TLS_CLIENT_KEY_PATH',
    paramsKey: 'agent.tls.client.key-path',
    description: 'Private key (PEM) of --tls-client-cert.',
  },
  {
    flag: 'tls-secret-name',
    type: 'string',
    default: 'argocd-agent-client-tls',
    env: 'ARGOCD_AGENT_TLS_SECRET_NAME',
    paramsKey: 'agent.tls.secret-name',
    description:
      'Secret (tls.crt, tls.key) in --namespace with the client certificate for mtls: when --tls-client-cert and --tls-client-key are not given; watched, new connections use a rotated one.',
  },
  {
    flag: 'root-ca-secret-name',
    type: 'string',
    default: 'argocd-agent-ca',
    env: 'ARGOCD_AGENT_TLS_ROOT_CA_SECRET_NAME',
    paramsKey: 'agent.tls.root-ca-secret-name',
    description:
      'Secret whose ca.crt (and tls.crt) verifies the gateway when --root-ca-path is not given; absent: system roots.',
  },
  ...agentTlsProtocolOptions,
  ...agentTracingOptions,
  {
    flag: 'root-ca-path',
    type: 'file',
    env: 'ARGOCD_AGENT_TLS_ROOT_CA_PATH',
    paramsKey: 'agent.tls.root-ca-path',
    description: "CA bundle that verifies the gateway's certificate (default: system roots).",
  },
  {
    flag: 'insecure-tls',
    type: 'boolean',
    env: ['ARGOCD_AGENT_TLS_INSECURE', 'ARGOCD_AGENT_TLS_CLIENT_INSECURE'],
    paramsKey: 'agent.tls.client.insecure',
    description: "Do not verify the gateway's certificate. Development only.",
  },
  {
    flag: 'insecure-plaintext',
    type: 'boolean',
    env: ['ARGOCD_AGENT_TLS_INSECURE_PLAINTEXT', 'ARGOCD_AGENT_INSECURE_PLAINTEXT'],
    paramsKey: 'agent.tls.insecure-plaintext',
    description: 'Connect without TLS (behind a mesh sidecar that adds mTLS). Implied by --creds=header:.',
  },
  {
    flag: 'heartbeat-interval',
    type: 'duration',
    default: '30s',
    min: '1s',
    env: 'ARGOCD_AGENT_HEARTBEAT_INTERVAL',
    paramsKey: 'agent.heartbeat.interval',
    description:
      'Application heartbeats: keep mesh idle timeouts from cutting the tunnel and detect a dead one.',
  },
  {
    flag: 'keep-alive-ping-interval',
    type: 'duration',
    default: 0,
    env: 'ARGOCD_AGENT_KEEP_ALIVE_PING_INTERVAL',
    paramsKey: 'agent.keep-alive.interval',
    description: 'HTTP/2 keepalive pings (0 = off). Meshes do not count them as activity; heartbeats do.',
  },
  {
    flag: 'kubeconfig',
    type: 'file',
    env: 'ARGOCD_AGENT_KUBECONFIG',
    paramsKey: 'agent.kubeconfig',
    description: 'Kubeconfig for the local cluster (default: in-cluster service account, then $KUBECONFIG).',
  },
  {
    flag: 'kubecontext',
    type: 'string',
    env: 'ARGOCD_AGENT_KUBECONTEXT',
    paramsKey: 'agent.kubecontext',
    description: 'Context of --kubeconfig to use (default: its current context).',
  },
  {
    flag: 'enable-resource-proxy',
    type: 'boolean',
    default: true,
    env: 'ARGOCD_AGENT_ENABLE_RESOURCE_PROXY',
    paramsKey: 'agent.resource-proxy.enable',
    description: 'Serve Kubernetes API requests from the resource proxy.',
  },
  {
    flag: 'resource-proxy-filter',
    type: 'enum',
    values: ['managed', 'none'],
    default: 'managed',
    env: 'ARGOCD_AGENT_RESOURCE_PROXY_FILTER',
    paramsKey: 'agent.resource-proxy.filter',
    description:
      "managed: only resources Argo CD manages (tracking annotation/label, or an owner that has it) are visible and writable; none: everything the agent's RBAC allows (a risk: only for trusted setups).",
  },
  {
    flag: 'resource-proxy-allow-impersonation',
    type: 'boolean',
    env: 'ARGOCD_AGENT_RESOURCE_PROXY_ALLOW_IMPERSONATION',
    paramsKey: 'agent.resource-proxy.allow-impersonation',
    description:
      "Forward Impersonate-* headers that the resource proxy let through (its --impersonation-allowed-callers); the agent's service account must be allowed to impersonate.",
  },
  {
    flag: 'enable-exec',
    type: 'boolean',
    env: 'ARGOCD_AGENT_ENABLE_EXEC',
    paramsKey: 'agent.exec.enable',
    description:
      "Serve exec, attach and port-forward (kubectl exec/cp/attach/port-forward, Argo CD's web terminal) through the resource proxy, for pods the filter lets through; the agent's service account needs create on pods/exec, pods/attach and pods/portforward.",
  },
  {
    flag: 'exec-max-sessions',
    type: 'int',
    default: 20,
    min: 1,
    max: 10000,
    env: 'ARGOCD_AGENT_EXEC_MAX_SESSIONS',
    paramsKey: 'agent.exec.max-sessions',
    description: 'exec, attach and port-forward sessions open at once on this agent; more get 429.',
  },
  {
    flag: 'exec-max-duration',
    type: 'duration',
    default: '30m',
    min: '1s',
    env: 'ARGOCD_AGENT_EXEC_MAX_DURATION',
    paramsKey: 'agent.exec.max-duration',
    description: "A session is cut after this long (argocd-agent's web terminal: 30 minutes).",
  },
  {
    flag: 'exec-idle-timeout',
    type: 'duration',
    default: 0,
    env: 'ARGOCD_AGENT_EXEC_IDLE_TIMEOUT',
    paramsKey: 'agent.exec.idle-timeout',
    description:
      'A session with no bytes either way for this long is cut (0: only --exec-max-duration applies).',
  },
  {
    flag: 'namespace',
    type: 'string',
    default: 'argocd',
    env: 'ARGOCD_AGENT_NAMESPACE',
    paramsKey: 'agent.namespace',
    description: 'Namespace of Argo CD on this cluster (argocd-cm tells the tracking method).',
  },
  {
    flag: 'extensions-config-path',
    type: 'string',
    env: 'ARGOCD_AGENT_EXTENSIONS_CONFIG_PATH',
    paramsKey: 'agent.extensions.config-path',
    description:
      'Extension map (YAML: extensions: [{name, url, headers, backend}]) naming the in-cluster URL behind each Argo CD proxy extension this agent serves; watched and reloaded on change (mount a ConfigMap without subPath). Unset: no extensions unless --extensions-config.',
  },
  {
    flag: 'extensions-config',
    type: 'string',
    env: 'ARGOCD_AGENT_EXTENSIONS_CONFIG',
    paramsKey: 'agent.extensions.config',
    description: 'The extension map inline, when there is no --extensions-config-path (read at start only).',
  },
  {
    flag: 'extensions-secret-name',
    type: 'string',
    default: 'pullplane-agent-extensions',
    env: 'ARGOCD_AGENT_EXTENSIONS_SECRET_NAME',
    paramsKey: 'agent.extensions.secret-name',
    description:
      'Secret in --namespace whose keys fill extension headers written as value: $key; watched. Requests for an extension whose key is missing get 503.',
  },
  {
    flag: 'redis-addr',
    type: 'host-port',
    defaultPort: 6379,
    default: 'argocd-redis:6379',
    env: ['ARGOCD_AGENT_REDIS_ADDRESS', 'REDIS_ADDR'],
    paramsKey: 'agent.redis.address',
    description:
      "This cluster's Argo CD Redis: the redis proxy's agent keys (live application state) are served from it.",
  },
  {
    flag: 'redis-password',
    type: 'string',
    secret: true,
    env: 'REDIS_PASSWORD',
    paramsKey: 'agent.redis.password',
    description: 'Password of --redis-addr.',
  },
  {
    flag: 'redis-creds-dir-path',
    type: 'file',
    kind: 'directory',
    env: 'REDIS_CREDS_DIR_PATH',
    paramsKey: 'agent.redis.creds-dir-path',
    description:
      "Directory with Argo CD's file-based Redis credentials: its `auth` file is the password when --redis-password is not set.",
  },
  {
    flag: 'redis-tls',
    aliases: 'redis-tls-enabled',
    type: 'boolean',
    env: 'ARGOCD_AGENT_REDIS_TLS_ENABLED',
    paramsKey: 'agent.redis.tls.enabled',
    description: 'Connect to --redis-addr over TLS.',
  },
  {
    flag: 'redis-ca-path',
    aliases: 'redis-tls-ca-path',
    type: 'file',
    mustExist: false,
    env: 'ARGOCD_AGENT_REDIS_TLS_CA_PATH',
    paramsKey: 'agent.redis.tls.ca-path',
    description:
      "CA that verifies the Redis server's certificate with --redis-tls (else the Secret --redis-tls-ca-secret-name, else system roots).",
  },
  {
    flag: 'redis-tls-ca-secret-name',
    type: 'string',
    default: 'argocd-redis-tls',
    env: 'ARGOCD_AGENT_REDIS_TLS_CA_SECRET_NAME',
    paramsKey: 'agent.redis.tls.ca-secret-name',
    description:
      'Secret whose ca.crt verifies the Redis server with --redis-tls when --redis-ca-path is not given.',
  },
  {
    flag: 'redis-tls-insecure',
    type: 'boolean',
    env: 'ARGOCD_AGENT_REDIS_TLS_INSECURE',
    paramsKey: 'agent.redis.tls.insecure',
    description: "Do not verify the Redis server's certificate. Development only.",
  },
]);

/** What `createAgentService` reads: its flags, and its ops ports unless its ops are shared. */
export type AgentServiceConfig = InferConfig<typeof agentServiceOptions> & OpsFlags;
