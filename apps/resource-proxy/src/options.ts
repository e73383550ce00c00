import { defineOptions } from '@pullplane/config';
import { resourceProxyServiceOptions } from '@pullplane/resource-proxy';
import { principalTracingOptions } from '@pullplane/tracing';

/** Flags of the resource proxy; env ARGOCD_PRINCIPAL_*, params keys principal.resource-proxy.*. */
export const resourceProxyOptions = defineOptions([
  ...resourceProxyServiceOptions,
  ...principalTracingOptions,
  {
    flag: 'drain-timeout',
    type: 'duration',
    default: '15s',
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_DRAIN_TIMEOUT',
    paramsKey: 'principal.resource-proxy.drain-timeout',
    description: 'On SIGTERM, how long in-flight requests (and watches) may go on.',
  },
  {
    flag: 'metrics-port',
    type: 'port',
    default: 8001,
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_METRICS_PORT',
    paramsKey: 'principal.resource-proxy.metrics.port',
    description: 'Prometheus /metrics port.',
  },
  {
    flag: 'healthz-port',
    type: 'port',
    default: 8004,
    env: 'ARGOCD_PRINCIPAL_RESOURCE_PROXY_HEALTHZ_PORT',
    paramsKey: 'principal.resource-proxy.healthz.port',
    description: '/healthz and /readyz port.',
  },
  {
    flag: 'log-level',
    type: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error'],
    default: 'info',
    env: 'ARGOCD_PRINCIPAL_LOG_LEVEL',
    paramsKey: 'principal.log.level',
    description: 'Log level.',
  },
]);
