import { defineOptions } from '@pullplane/config';
import { resourceProxyServiceOptions } from '@pullplane/resource-proxy';
import { opsOptions } from '@pullplane/service';
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
  ...opsOptions({ family: 'principal', component: 'resource-proxy', metricsPort: 8001, healthzPort: 8004 }),
]);
