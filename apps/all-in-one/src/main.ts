import { parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { createAllInOneApp } from './app.js';
import { allInOneOptions } from './options.js';

const { config } = parseOrExit(allInOneOptions, {
  appName: 'all-in-one',
  summary: 'Gateway, resource proxy and redis proxy in one process, with demo agents on simulated clusters.',
  argv: process.argv.slice(2),
  env: process.env,
});
const logger = createLogger({
  level: config.logLevel,
  name: 'all-in-one',
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
const tracing = await startTracing({
  app: 'all-in-one',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const app = await createAllInOneApp(config, {
  logger,
  registry: createMetricsRegistry(),
  tracer: tracing.tracer,
});
installShutdown({
  logger,
  drainTimeoutMs: 5_000,
  shutdown: () => app.stop().finally(() => tracing.shutdown()),
});
try {
  await app.start();
  process.stderr.write(app.nextSteps());
} catch (err) {
  logger.fatal({ err: String(err) }, 'all-in-one failed to start');
  process.exit(1);
}
