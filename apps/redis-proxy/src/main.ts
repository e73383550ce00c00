import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
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
const logger = createLogger({ level: config.logLevel, name: 'redis-proxy' });
logUnusedNames(unused, logger);
if (config.disableRedisProxy) {
  logger.info('redis proxy is disabled (--disable-redis-proxy); exiting');
  process.exit(0);
}
const app = createRedisProxyApp(config, { logger, registry: createMetricsRegistry() });
installShutdown({ logger, drainTimeoutMs: config.drainTimeout + 5_000, shutdown: () => app.stop() });
process.on('SIGHUP', () => void app.reloadTls());
app.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'redis proxy failed to start');
  process.exit(1);
});
