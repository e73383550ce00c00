import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { createRedisProxyApp, validateRedisProxyConfig } from './app.js';
import { redisProxyOptions } from './options.js';

const { config, unused } = parseOrExit(redisProxyOptions, {
  appName: 'redis-proxy',
  summary:
    "The Argo CD server's Redis: agents' live application state through their tunnels, the rest from the principal Redis.",
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateRedisProxyConfig(c, process.env),
  unusedNames: { app: 'redis-proxy', family: 'principal' },
});
const logger = createLogger({
  level: config.logLevel,
  name: 'redis-proxy',
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
logUnusedNames(unused, logger);
if (config.disableRedisProxy) {
  logger.info('redis proxy is disabled (--disable-redis-proxy); exiting');
  process.exit(0);
}
const tracing = await startTracing({
  app: 'redis-proxy',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const app = createRedisProxyApp(config, {
  logger,
  registry: createMetricsRegistry(),
  tracer: tracing.tracer,
});
installShutdown({
  logger,
  drainTimeoutMs: config.drainTimeout + 5_000,
  // Spans still queued (the drained requests' too) are exported before exit.
  shutdown: () => app.stop().finally(() => tracing.shutdown()),
});
process.on('SIGHUP', () => void app.reloadTls());
app.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'redis proxy failed to start');
  process.exit(1);
});
