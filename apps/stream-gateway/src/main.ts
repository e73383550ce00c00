import { parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { createStreamGatewayApp, gatewayStartupWarnings, validateGatewayConfig } from './app.js';
import { gatewayOptions } from './options.js';

const { config, paramsFile } = parseOrExit(gatewayOptions, {
  appName: 'stream-gateway',
  summary: 'Holds agent tunnels; proxy replicas reach agents through it.',
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
  validate: (c) => validateGatewayConfig(c),
});
const logger = createLogger({ level: config.logLevel, name: 'stream-gateway' });
for (const warning of gatewayStartupWarnings(config)) logger.warn(warning);
const app = createStreamGatewayApp(config, { logger, registry: createMetricsRegistry() });
installShutdown({ logger, drainTimeoutMs: config.drainTimeout, shutdown: () => app.stop() });
process.on('SIGHUP', () => app.reloadTls());
app.start().then(
  () => logger.info({ paramsFile }, 'ready'),
  (err: unknown) => {
    logger.fatal({ err: String(err) }, 'stream gateway failed to start');
    process.exit(1);
  },
);
