import { defineOptions } from '@pullplane/config';
import { extensionProxyServiceOptions } from '@pullplane/extension-proxy';
import { opsOptions } from '@pullplane/service';
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
  ...opsOptions({ family: 'principal', component: 'extension-proxy', metricsPort: 8006, healthzPort: 8007 }),
]);
