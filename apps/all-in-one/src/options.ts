import { defineOptions } from '@pullplane/config';
import { logLevelOption } from '@pullplane/service';
import { principalTracingOptions } from '@pullplane/tracing';

/**
 * The single-process mode. Ports default to unusual values so a local Redis or API server
 * on the standard ports is never in the way.
 */
export const allInOneOptions = defineOptions([
  {
    flag: 'listen-host',
    type: 'string',
    default: '127.0.0.1',
    env: 'PULLPLANE_LISTEN_HOST',
    description: 'Address every listener binds to.',
  },
  {
    flag: 'gateway-port',
    type: 'port',
    default: 18443,
    env: 'PULLPLANE_GATEWAY_PORT',
    description: 'Where agents connect.',
  },
  {
    flag: 'resource-proxy-port',
    type: 'port',
    default: 19090,
    env: 'PULLPLANE_RESOURCE_PROXY_PORT',
    description: 'The Kubernetes API front for kubectl and Argo CD.',
  },
  {
    flag: 'extension-proxy-port',
    type: 'port',
    default: 18090,
    env: 'PULLPLANE_EXTENSION_PROXY_PORT',
    description: "The extension proxy, as Argo CD's proxy extensions would call it.",
  },
  {
    flag: 'redis-proxy-port',
    type: 'port',
    default: 16379,
    env: 'PULLPLANE_REDIS_PROXY_PORT',
    description: 'The redis proxy, when --redis-server-address is set.',
  },
  {
    flag: 'redis-server-address',
    type: 'host-port',
    defaultPort: 6379,
    env: 'PULLPLANE_REDIS_SERVER_ADDRESS',
    description:
      'A Redis to act as the principal Redis; enables the redis proxy (no Redis is assumed on this machine).',
  },
  {
    flag: 'agent-redis-address',
    type: 'host-port',
    defaultPort: 6379,
    env: 'PULLPLANE_AGENT_REDIS_ADDRESS',
    description:
      "The Redis every demo agent serves agent keys from, as if it were its cluster's Argo CD Redis (default: --redis-server-address).",
  },
  {
    flag: 'ops-port',
    type: 'port',
    default: 18000,
    env: 'PULLPLANE_OPS_PORT',
    description: '/healthz, /readyz and /metrics.',
  },
  {
    flag: 'agents',
    type: 'int',
    default: 2,
    min: 0,
    max: 10000,
    env: 'PULLPLANE_DEMO_AGENTS',
    description: 'Demo agents to start, each with its own simulated cluster seeded with Argo CD apps.',
  },
  {
    flag: 'state-dir',
    type: 'string',
    default: '.pullplane',
    env: 'PULLPLANE_STATE_DIR',
    description: 'Where the generated CA, certificates and kubeconfig are written.',
  },
  {
    flag: 'request-timeout',
    type: 'duration',
    default: '10s',
    env: 'PULLPLANE_REQUEST_TIMEOUT',
    description: 'Non-streaming requests fail with 504 after this long.',
  },
  ...logLevelOption({ env: 'PULLPLANE_LOG_LEVEL' }),
  ...principalTracingOptions,
]);
