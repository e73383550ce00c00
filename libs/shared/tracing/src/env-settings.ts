import type * as SdkTrace from '@opentelemetry/sdk-trace';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (the SDK's standard names; the 3.x trace SDK
 * leaves reading them to the application): always_on, always_off, traceidratio and their
 * parentbased_ forms. Default parentbased_always_on: a caller's sampling decision is kept.
 */
export function samplerFromEnv(sdk: typeof SdkTrace, env: Env, log: Logger): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const arg = Number.parseFloat(env.OTEL_TRACES_SAMPLER_ARG ?? '');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  const root = (base: string): Sampler | undefined => {
    if (base === 'always_on') return new sdk.AlwaysOnSampler();
    if (base === 'always_off') return new sdk.AlwaysOffSampler();
    if (base === 'traceidratio') return new sdk.TraceIdRatioBasedSampler(ratio);
    return undefined;
  };
  const parentBased = name.startsWith('parentbased_');
  const picked = root(parentBased ? name.slice('parentbased_'.length) : name);
  if (!picked) {
    log.warn({ OTEL_TRACES_SAMPLER: name }, 'unknown OTEL_TRACES_SAMPLER; using parentbased_always_on');
    return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
  return parentBased ? new sdk.ParentBasedSampler({ root: picked }) : picked;
}

/** OTEL_BSP_SCHEDULE_DELAY, _EXPORT_TIMEOUT, _MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE. */
export function spanProcessorSettingsFromEnv(
  env: Env,
  log: Logger,
): {
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
  maxQueueSize?: number;
  maxExportBatchSize?: number;
} {
  const out: Record<string, number> = {};
  const read = (name: string, key: string) => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) {
      log.warn({ [name]: raw }, `${name} is not a positive integer; ignored`);
      return;
    }
    out[key] = n;
  };
  read('OTEL_BSP_SCHEDULE_DELAY', 'scheduledDelayMillis');
  read('OTEL_BSP_EXPORT_TIMEOUT', 'exportTimeoutMillis');
  read('OTEL_BSP_MAX_QUEUE_SIZE', 'maxQueueSize');
  read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'maxExportBatchSize');
  return out;
}
