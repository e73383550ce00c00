import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { createStreamGatewayApp, gatewayStartupWarnings, validateGatewayConfig } from './app.js';
import { gatewayOptions } from './options.js';
import { releaseStartupHeap } from './startup-heap.js';

const { config, paramsFile, unused } = parseOrExit(gatewayOptions, {
  appName: 'stream-gateway',
  summary: 'Holds agent tunnels; proxy replicas reach agents through it.',
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateGatewayConfig(c, process.env),
  unusedNames: { app: 'stream-gateway', family: 'principal' },
});
const logger = createLogger({
  level: config.logLevel,
  name: 'stream-gateway',
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
logUnusedNames(unused, logger);
for (const warning of gatewayStartupWarnings(config)) logger.warn(warning);
const tracing = await startTracing({
  app: 'stream-gateway',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const app = createStreamGatewayApp(config, {
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
app.start().then(
  () => {
    releaseStartupHeap();
    logger.info({ paramsFile }, 'ready');
  },
  (err: unknown) => {
    logger.fatal({ err: String(err) }, 'stream gateway failed to start');
    process.exit(1);
  },
);
