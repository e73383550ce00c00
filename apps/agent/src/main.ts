import { logUnusedNames, parseOrExit } from '@pullplane/config';
import { createLogger, createMetricsRegistry, installShutdown } from '@pullplane/telemetry';
import { startTracing, traceLogFields } from '@pullplane/tracing';
import { createAgentApp, validateAgentConfig } from './app.js';
import { agentOptions } from './options.js';

const { config, unused } = parseOrExit(agentOptions, {
  appName: 'agent',
  summary: 'Runs in a workload cluster; dials out to the gateway and serves its requests.',
  argv: process.argv.slice(2),
  env: process.env,
  paramsFileEnv: 'ARGOCD_AGENT_PARAMS_FILE',
  validate: (c) => validateAgentConfig(c, process.env),
  unusedNames: { app: 'agent', family: 'agent' },
});
const logger = createLogger({
  level: config.logLevel,
  name: 'agent',
  base: { agent: config.agentName },
  ...(config.otlpAddress ? { mixin: traceLogFields } : {}),
});
logUnusedNames(unused, logger);
const tracing = await startTracing({
  app: 'agent',
  address: config.otlpAddress,
  insecure: config.otlpInsecure,
  logger,
});
const app = createAgentApp(config, { logger, registry: createMetricsRegistry(), tracer: tracing.tracer });
installShutdown({
  logger,
  drainTimeoutMs: 10_000,
  // Spans still queued (the drained requests' too) are exported before exit.
  shutdown: () => app.stop().finally(() => tracing.shutdown()),
});
app.start().catch((err: unknown) => {
  logger.fatal({ err: String(err) }, 'agent failed to start');
  process.exit(1);
});
