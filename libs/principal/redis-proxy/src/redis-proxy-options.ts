import { natsOptions } from '@pullplane/bus';
import { defineOptions, type InferConfig } from '@pullplane/config';
import { gatewayClientOptions } from '@pullplane/proxy-replica';
import type { OpsFlags } from '@pullplane/service';
import { principalSecretAccessOptions, principalTlsProtocolOptions } from '@pullplane/tls-material';
import { principalTracingOptions } from '@pullplane/tracing';

/**
 * The redis proxy service's flags; env ARGOCD_PRINCIPAL_*, params keys principal.redis-proxy.*
 * (and argocd-agent's own names where it has them); its main adds the ops flags (`opsOptions`).
 */
export const redisProxyServiceOptions = defineOptions([
  ...natsOptions,
  {
    flag: 'disable-redis-proxy',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_DISABLE_REDIS_PROXY',
    paramsKey: 'principal.redis-proxy.disable',
    description: "Do not run the redis proxy: the service says so and exits 0 (argocd-agent's switch).",
  },
  {
    flag: 'listen-host',
    type: 'string',
    default: '0.0.0.0',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_LISTEN_HOST',
    paramsKey: 'principal.redis-proxy.listen.host',
    description: 'Address the Argo CD server connects to.',
  },
  {
    flag: 'listen-port',
    type: 'port',
    default: 6379,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_LISTEN_PORT',
    paramsKey: 'principal.redis-proxy.listen.port',
    description: 'Redis port of the proxy (the argocd-agent-redis-proxy Service).',
  },
  {
    flag: 'redis-server-address',
    type: 'host-port',
    defaultPort: 6379,
    default: 'argocd-redis:6379',
    env: 'ARGOCD_PRINCIPAL_REDIS_SERVER_ADDRESS',
    paramsKey: 'principal.redis.server.address',
    description: "The principal's own Redis (Argo CD's argocd-redis): every key that is not an agent's.",
  },
  {
    flag: 'redis-password',
    type: 'string',
    secret: true,
    env: 'REDIS_PASSWORD',
    paramsKey: 'principal.redis.password',
    description:
      'Password of the principal Redis; when set, clients must present it too (AUTH, or HELLO … AUTH default <password>).',
  },
  {
    flag: 'redis-creds-dir-path',
    type: 'file',
    kind: 'directory',
    env: 'REDIS_CREDS_DIR_PATH',
    paramsKey: 'principal.redis.creds-dir-path',
    description:
      "Directory with Argo CD's file-based Redis credentials: its `auth` file is the password (when --redis-password is not set).",
  },
  {
    flag: 'redis-tls',
    aliases: 'redis-tls-enabled',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_REDIS_TLS_ENABLED',
    paramsKey: 'principal.redis.tls.enabled',
    description:
      "TLS both ways, as argocd-agent: towards the principal Redis, and on this proxy's own listener (with --tls-cert-path, else --redis-proxy-server-tls-cert, else the Secret --redis-proxy-server-tls-secret-name).",
  },
  {
    flag: 'redis-ca-path',
    type: 'file',
    mustExist: false,
    env: ['ARGOCD_PRINCIPAL_REDIS_TLS_CA_PATH', 'ARGOCD_PRINCIPAL_REDIS_CA_PATH'],
    paramsKey: ['principal.redis.tls.ca-path', 'principal.redis.ca-path'],
    description:
      "CA that verifies the principal Redis' certificate with --redis-tls (else the Secret --redis-ca-secret-name, else system roots).",
  },
  {
    flag: 'redis-ca-secret-name',
    type: 'string',
    default: 'argocd-redis-tls',
    env: 'ARGOCD_PRINCIPAL_REDIS_CA_SECRET_NAME',
    paramsKey: 'principal.redis.ca-secret-name',
    description:
      'Secret whose ca.crt verifies the principal Redis with --redis-tls when --redis-ca-path is not given; watched.',
  },
  {
    flag: 'redis-tls-insecure',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_REDIS_TLS_INSECURE',
    paramsKey: 'principal.redis.tls.insecure',
    description: "Do not verify the principal Redis' certificate. Development only.",
  },
  {
    flag: 'tls-cert-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_TLS_CERT_PATH',
    paramsKey: 'principal.redis-proxy.tls.cert-path',
    description: 'Server certificate (PEM): with --tls-key-path, clients connect over TLS.',
  },
  {
    flag: 'tls-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_TLS_KEY_PATH',
    paramsKey: 'principal.redis-proxy.tls.key-path',
    description: 'Private key (PEM) of --tls-cert-path.',
  },
  {
    flag: 'tls-client-ca-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_TLS_CLIENT_CA_PATH',
    paramsKey: 'principal.redis-proxy.tls.client-ca-path',
    description:
      'When set, clients must present a caller certificate (URI SAN spiffe://pullplane/caller/<name>) signed by this CA; agent and proxy certificates are refused.',
  },
  {
    flag: 'redis-proxy-server-tls-cert',
    type: 'file',
    mustExist: false,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_CERT_PATH',
    paramsKey: 'principal.redis.proxy.server.tls.cert-path',
    description:
      "argocd-agent's listener certificate: used with --redis-tls when --tls-cert-path is not given.",
  },
  {
    flag: 'redis-proxy-server-tls-key',
    type: 'file',
    mustExist: false,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_KEY_PATH',
    paramsKey: 'principal.redis.proxy.server.tls.key-path',
    description: 'Private key of --redis-proxy-server-tls-cert.',
  },
  {
    flag: 'redis-proxy-server-tls-secret-name',
    type: 'string',
    default: 'argocd-redis-proxy-tls',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_SECRET_NAME',
    paramsKey: 'principal.redis.proxy.server.tls.secret-name',
    description:
      'Secret (tls.crt, tls.key) with the listener certificate for --redis-tls when no certificate file is given; watched.',
  },
  ...principalTlsProtocolOptions,
  ...principalTracingOptions,
  ...principalSecretAccessOptions,
  {
    flag: 'agent-key-prefixes',
    type: 'list',
    default: ['app|managed-resources|', 'app|resources-tree|'],
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_AGENT_KEY_PREFIXES',
    paramsKey: 'principal.redis-proxy.agent-key-prefixes',
    description:
      "Key prefixes after which <agent>_ names the agent whose Redis holds the key (each ends with '|', has no '_').",
  },
  ...gatewayClientOptions('redis-proxy'),
  {
    flag: 'request-timeout',
    type: 'duration',
    default: '5s',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_REQUEST_TIMEOUT',
    paramsKey: 'principal.redis-proxy.request-timeout',
    description:
      'An agent that does not answer a command by then gets the client an error (the connection stays).',
  },
  {
    flag: 'allow-commands',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_ALLOW_COMMANDS',
    paramsKey: 'principal.redis-proxy.allow-commands',
    description:
      "Commands relayed to the principal Redis beyond what Argo CD sends (name, or name|subcommand as in 'client|list'); everything else is refused.",
  },
  {
    flag: 'max-unauthenticated-args',
    type: 'int',
    default: 10,
    // go-redis authenticates with HELLO 3 AUTH <user> <password> SETNAME <name>: 7 arguments.
    min: 7,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_UNAUTHENTICATED_ARGS',
    paramsKey: 'principal.redis-proxy.max-unauthenticated-args',
    description: 'Most arguments in a command before AUTH (as Redis 7); more closes the connection.',
  },
  {
    flag: 'max-unauthenticated-bytes',
    type: 'int',
    default: 16384,
    min: 256,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_UNAUTHENTICATED_BYTES',
    paramsKey: 'principal.redis-proxy.max-unauthenticated-bytes',
    description:
      'Largest command (bytes as sent) before AUTH; larger closes the connection before it is read.',
  },
  {
    flag: 'unauthenticated-timeout',
    type: 'duration',
    default: '10s',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_UNAUTHENTICATED_TIMEOUT',
    paramsKey: 'principal.redis-proxy.unauthenticated-timeout',
    description: 'A connection that has not authenticated by then is closed (0s: never).',
  },
  {
    flag: 'max-command-args',
    type: 'int',
    default: 16384,
    min: 3,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_COMMAND_ARGS',
    paramsKey: 'principal.redis-proxy.max-command-args',
    description: 'Most arguments in one command; more is a protocol error that closes the connection.',
  },
  {
    flag: 'max-bulk-length',
    type: 'int',
    default: 67108864,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_BULK_LENGTH',
    paramsKey: 'principal.redis-proxy.max-bulk-length',
    description: 'Largest value (bytes) a client may send; larger ones are a protocol error, as in Redis.',
  },
  {
    flag: 'max-command-bytes',
    type: 'int',
    default: 68157440,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_COMMAND_BYTES',
    paramsKey: 'principal.redis-proxy.max-command-bytes',
    description:
      'Largest command (bytes as sent, a --max-bulk-length value plus its key and options); refused when its headers announce more.',
  },
  {
    flag: 'max-client-input-bytes',
    type: 'int',
    default: 134217728,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_CLIENT_INPUT_BYTES',
    paramsKey: 'principal.redis-proxy.max-client-input-bytes',
    description:
      'Request bytes one connection may have in the proxy (the command being received, commands queued toward agents); reading stops above it.',
  },
  {
    flag: 'max-client-output-bytes',
    type: 'int',
    default: 134217728,
    min: 1024,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_CLIENT_OUTPUT_BYTES',
    paramsKey: 'principal.redis-proxy.max-client-output-bytes',
    description:
      "Unsent replies after which a client that does not read them is disconnected (Redis' client-output-buffer-limit).",
  },
  {
    flag: 'max-buffered-bytes',
    type: 'int',
    default: 268435456,
    min: 1048576,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_BUFFERED_BYTES',
    paramsKey: 'principal.redis-proxy.max-buffered-bytes',
    description:
      "Every client's request and reply bytes together (Redis' maxmemory-clients); a command or reply that does not fit closes its connection.",
  },
  {
    flag: 'max-clients',
    type: 'int',
    default: 10000,
    min: 1,
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_CLIENTS',
    paramsKey: 'principal.redis-proxy.max-clients',
    description: 'Connections beyond this are refused with "max number of clients reached".',
  },
  {
    flag: 'drain-timeout',
    type: 'duration',
    default: '10s',
    env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_DRAIN_TIMEOUT',
    paramsKey: 'principal.redis-proxy.drain-timeout',
    description:
      'On SIGTERM, how long connections get to receive the replies they are owed before they are closed.',
  },
]);

/** What `createRedisProxyService` reads: its flags, and its ops ports unless its ops are shared. */
export type RedisProxyServiceConfig = InferConfig<typeof redisProxyServiceOptions> & OpsFlags;
