import { defineOptions } from '@pullplane/config';
import { redisProxyServiceOptions } from '@pullplane/redis-proxy';
import { opsOptions } from '@pullplane/service';

/** Flags of the redis proxy; env ARGOCD_PRINCIPAL_*, params keys principal.redis-proxy.* (and argocd-agent's own names where it has them). */
export const redisProxyOptions = defineOptions([
  ...redisProxyServiceOptions,
  ...opsOptions({ family: 'principal', component: 'redis-proxy', metricsPort: 8002, healthzPort: 8005 }),
]);
