import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createResourceProxyService, validateResourceProxyConfig } from '@pullplane/resource-proxy';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
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
const tracing = await startTracing({
  app: 'resource-proxy',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const service = createResourceProxyService(config, {
  logger,
  registry: createMetricsRegistry(),
  tracer: tracing.tracer,
});
for (const warning of service.warnings) logger.warn(warning);
installShutdown({
  logger,
  drainTimeoutMs: config.drainTimeout,
  // Spans still queued (the drained requests' too) are exported before exit.
  shutdown: () => service.stop().finally(() => tracing.shutdown()),
});
process.on('SIGHUP', () => void service.reloadTls());
service.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'resource proxy failed to start');
  process.exit(1);
});
