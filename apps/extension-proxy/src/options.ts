import { defineOptions } from '@pullplane/config';
import { extensionProxyServiceOptions } from '@pullplane/extension-proxy';
import { principalTracingOptions } from '@pullplane/tracing';

/** Flags of the extension proxy; env ARGOCD_PRINCIPAL_EXTENSION_PROXY_*, params keys principal.extension-proxy.*. */
export const extensionProxyOptions = defineOptions([
  ...extensionProxyServiceOptions,
  ...principalTracingOptions,
  {
    flag: 'drain-timeout',
    type: 'duration',
    default: '15s',
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_DRAIN_TIMEOUT',
    paramsKey: 'principal.extension-proxy.drain-timeout',
    description: 'On SIGTERM, how long in-flight requests (event streams, WebSockets) may go on.',
  },
  {
    flag: 'metrics-port',
    type: 'port',
    default: 8006,
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_METRICS_PORT',
    paramsKey: 'principal.extension-proxy.metrics.port',
    description: 'Prometheus /metrics port.',
  },
  {
    flag: 'healthz-port',
    type: 'port',
    default: 8007,
    env: 'ARGOCD_PRINCIPAL_EXTENSION_PROXY_HEALTHZ_PORT',
    paramsKey: 'principal.extension-proxy.healthz.port',
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
