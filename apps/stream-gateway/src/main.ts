import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { createStreamGatewayApp, gatewayStartupWarnings, validateGatewayConfig } from './app.js';
import { gatewayOptions } from './options.js';

const { config, paramsFile, unused } = parseOrExit(gatewayOptions, {
  appName: 'stream-gateway',
  summary: 'Holds agent tunnels; proxy replicas reach agents through it.',
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateGatewayConfig(c, process.env),
  unusedNames: { app: 'stream-gateway', family: 'principal' },
});
const logger = createLogger({ level: config.logLevel, name: 'stream-gateway' });
logUnusedNames(unused, logger);
for (const warning of gatewayStartupWarnings(config)) logger.warn(warning);
const app = createStreamGatewayApp(config, { logger, registry: createMetricsRegistry() });
installShutdown({ logger, drainTimeoutMs: config.drainTimeout, shutdown: () => app.stop() });
process.on('SIGHUP', () => void app.reloadTls());
app.start().then(
  () => logger.info({ paramsFile }, 'ready'),
  (err: unknown) => {
    logger.fatal({ err: String(err) }, 'stream gateway failed to start');
    process.exit(1);
  },
);
