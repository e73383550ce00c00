import { defineOptions } from '@pullplane/config';
import { gatewayServiceOptions } from '@pullplane/gateway';
import { opsOptions } from '@pullplane/service';

/** Flags of the stream gateway; env ARGOCD_PRINCIPAL_*, params keys principal.* as in argocd-agent. */
export const gatewayOptions = defineOptions([
  ...gatewayServiceOptions,
  ...opsOptions({ family: 'principal', metricsPort: 8000, healthzPort: 8003 }),
]);
