import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { createResourceProxyApp, resourceProxyStartupWarnings, validateResourceProxyConfig } from './app.js';
import { resourceProxyOptions } from './options.js';

const { config, unused } = parseOrExit(resourceProxyOptions, {
  appName: 'resource-proxy',
  summary: "Kubernetes API front for every agent's cluster, through the agents' tunnels.",
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateResourceProxyConfig(c, process.env),
  unusedNames: { app: 'resource-proxy', family: 'principal' },
});
const logger = createLogger({
  level: config.logLevel,
  name: 'resource-proxy',
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
logUnusedNames(unused, logger);
if (!config.enableResourceProxy) {
  logger.info('resource proxy is disabled (--enable-resource-proxy=false); exiting');
  process.exit(0);
}
for (const warning of resourceProxyStartupWarnings(config)) logger.warn(warning);
const tracing = await startTracing({
  app: 'resource-proxy',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const app = createResourceProxyApp(config, {
  logger,
  registry: createMetricsRegistry(),
  tracer: tracing.tracer,
});
installShutdown({
  logger,
  drainTimeoutMs: config.drainTimeout,
  // Spans still queued (the drained requests' too) are exported before exit.
  shutdown: () => app.stop().finally(() => tracing.shutdown()),
});
process.on('SIGHUP', () => void app.reloadTls());
app.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'resource proxy failed to start');
  process.exit(1);
});
