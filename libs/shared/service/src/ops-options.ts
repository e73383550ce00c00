import { type ConfigFamily, defineOptions, FAMILY_ENV_PREFIX, FAMILY_PARAMS_PREFIX } from '@pullplane/config';
import { LOG_LEVELS } from '@pullplane/telemetry';

/** `--log-level` (argocd-agent's levels) under the given env var and params key. */
export function logLevelOption(names: { env: string; paramsKey?: string }) {
  return defineOptions([
    {
      flag: 'log-level',
      type: 'enum',
      values: LOG_LEVELS,
      default: 'info',
      env: names.env,
      ...(names.paramsKey ? { paramsKey: names.paramsKey } : {}),
      description: 'Log level.',
    },
  ]);
}

/** Where a service's ops flags live and what its ports default to. */
export interface OpsOptionNames {
  readonly family: ConfigFamily;
  /**
   * A principal component with names of its own (`redis-proxy`: ARGOCD_PRINCIPAL_REDIS_PROXY_*,
   * principal.redis-proxy.*); none for the family's main service (the gateway, the agent).
   */
  readonly component?: string;
  readonly metricsPort: number;
  readonly healthzPort: number;
}

/**
 * `--metrics-port`, `--healthz-port` and `--log-level`, the flags every service's ops carry,
 * under argocd-agent's names: ARGOCD_<FAMILY>_[<COMPONENT>_]METRICS_PORT / HEALTHZ_PORT and
 * <family>.[<component>.]metrics.port / healthz.port; the family's main service also takes
 * argocd-agent's ARGOCD_<FAMILY>_HEALTH_CHECK_PORT; the log level is one per family.
 */
export function opsOptions(o: OpsOptionNames) {
  const component = o.component ? `${o.component.toUpperCase().replaceAll('-', '_')}_` : '';
  const env = `${FAMILY_ENV_PREFIX[o.family]}${component}`;
  const params = `${FAMILY_PARAMS_PREFIX[o.family]}${o.component ? `${o.component}.` : ''}`;
  return defineOptions([
    {
      flag: 'metrics-port',
      type: 'port',
      default: o.metricsPort,
      env: `${env}METRICS_PORT`,
      paramsKey: `${params}metrics.port`,
      description: 'Prometheus /metrics port.',
    },
    {
      flag: 'healthz-port',
      type: 'port',
      default: o.healthzPort,
      env: o.component ? `${env}HEALTHZ_PORT` : [`${env}HEALTHZ_PORT`, `${env}HEALTH_CHECK_PORT`],
      paramsKey: `${params}healthz.port`,
      description: '/healthz and /readyz port.',
    },
    ...logLevelOption({
      env: `${FAMILY_ENV_PREFIX[o.family]}LOG_LEVEL`,
      paramsKey: `${FAMILY_PARAMS_PREFIX[o.family]}log.level`,
    }),
  ]);
}
