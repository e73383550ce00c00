import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createExtensionProxyService, validateExtensionProxyConfig } from '@pullplane/extension-proxy';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { extensionProxyOptions } from './options.js';

const { config, unused } = parseOrExit(extensionProxyOptions, {
  appName: 'extension-proxy',
  summary:
    "Backend of Argo CD's proxy extensions: reaches each extension's service inside the workload cluster through the agent's tunnel.",
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateExtensionProxyConfig(c, process.env),
  unusedNames: { app: 'extension-proxy', family: 'principal' },
});
const logger = createLogger({
  level: config.logLevel,
  name: 'extension-proxy',
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
logUnusedNames(unused, logger);
const tracing = await startTracing({
  app: 'extension-proxy',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const service = createExtensionProxyService(config, {
  logger,
  registry: createMetricsRegistry(),
  tracer: tracing.tracer,
});
installShutdown({
  logger,
  drainTimeoutMs: config.drainTimeout,
  // Spans still queued (the drained requests' too) are exported before exit.
  shutdown: () => service.stop().finally(() => tracing.shutdown()),
});
process.on('SIGHUP', () => void service.reloadTls());
service.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'extension proxy failed to start');
  process.exit(1);
});
