import {
  type ConfigFamily,
  type EnvLike,
  FAMILY_ENV_PREFIX,
  type HostPort,
  type InferConfig,
  logUnusedNames,
  type OptionDef,
  parseOrExit,
} from '@pullplane/config';
import {
  createLogger,
  createMetricsRegistry,
  installShutdown,
  type LogLevel,
  type SignalSource,
} from '@pullplane/telemetry';
import { startTracing, type TracedApp, traceLogFields } from '@pullplane/tracing';
import type { DestinationStream } from 'pino';
import type { Service, ServiceDeps } from './service.js';

/** The flags the bootstrap itself reads (`opsOptions` and the tracing options carry them). */
export interface BootstrapFlags {
  readonly logLevel: LogLevel;
  readonly otlpAddress?: HostPort | undefined;
  readonly otlpInsecure: boolean;
}

/** One main: its options, its checks, and how its service is built. */
export interface ServiceSpec<T extends readonly OptionDef[], S extends Service> {
  /** The app: logger name, help, trace service name. */
  readonly name: TracedApp;
  /** How messages name it ("stream gateway"); the name with spaces by default. */
  readonly title?: string;
  /** One line for `--help`. */
  readonly summary: string;
  readonly options: T;
  /**
   * The params ConfigMap and env prefix it shares (ARGOCD_<FAMILY>_PARAMS_FILE names the
   * file; names of the family it does not read are reported at start).
   */
  readonly family?: ConfigFamily;
  /** Cross-field rules, reported with every other configuration problem (exit 2). */
  readonly validate?: (config: InferConfig<T>, env: EnvLike) => readonly string[];
  /** What is accepted but weaker than it could be: logged at warn before anything starts. */
  readonly warnings?: (config: InferConfig<T>) => readonly string[];
  /** Why the service does not run at all (switched off): said, then exit 0. */
  readonly disabled?: (config: InferConfig<T>) => string | undefined;
  /** Fields on every log line (the agent's name). */
  readonly logFields?: (config: InferConfig<T>) => Record<string, unknown>;
  /** The budget of the SIGTERM drain. */
  readonly drainTimeoutMs: (config: InferConfig<T>) => number;
  readonly create: (config: InferConfig<T>, deps: ServiceDeps) => S | Promise<S>;
  /** After a successful start (a banner, the startup heap released). */
  readonly started?: (service: S) => void;
}

/** The process a service runs in; injectable for tests. */
export interface ServiceProcess {
  readonly argv: readonly string[];
  readonly env: EnvLike;
  /** Signals: SIGTERM/SIGINT drain, SIGHUP reloads. */
  readonly signals: SignalSource;
  /** Must not return (throw in tests). */
  readonly exit: (code: number) => never;
  /** Log lines; stdout by default. */
  readonly destination?: DestinationStream;
  /** `--help` and configuration errors; process.stdout / process.stderr by default. */
  readonly stdout?: (text: string) => void;
  readonly stderr?: (text: string) => void;
}

const thisProcess = (): ServiceProcess => ({
  argv: process.argv.slice(2),
  env: process.env,
  signals: process,
  exit: (code) => process.exit(code),
});

type WithBootstrapFlags<T extends readonly OptionDef[]> =
  InferConfig<T> extends BootstrapFlags
    ? unknown
    : { readonly options: { error: 'the options lack --log-level, --otlp-address or --otlp-insecure' } };

/**
 * Runs a service as a process, the same way for every main: configuration (flags > env >
 * params file, `--help`, exit 2 with every problem), the JSON logger (trace ids on each line
 * when tracing), names of the family it does not read, warnings, tracing, the service, a
 * SIGTERM/SIGINT drain within its budget, SIGHUP reload, and start: a failure to start is
 * logged and exits 1. Resolves with the started service.
 */
export async function runService<const T extends readonly OptionDef[], S extends Service>(
  spec: ServiceSpec<T, S> & WithBootstrapFlags<T>,
  proc: ServiceProcess = thisProcess(),
): Promise<S> {
  const family = spec.family;
  const title = spec.title ?? spec.name.replaceAll('-', ' ');
  const validate = spec.validate;
  const { config, paramsFile, unused } = parseOrExit(spec.options, {
    appName: spec.name,
    summary: spec.summary,
    argv: proc.argv,
    env: proc.env,
    ...(family ? { paramsFileEnv: `${FAMILY_ENV_PREFIX[family]}PARAMS_FILE` } : {}),
    ...(validate ? { validate: (c: InferConfig<T>) => validate(c, proc.env) } : {}),
    ...(family ? { unusedNames: { app: spec.name, family } } : {}),
    exit: proc.exit,
    ...(proc.stdout ? { stdout: proc.stdout } : {}),
    ...(proc.stderr ? { stderr: proc.stderr } : {}),
  });
  const flags = config as InferConfig<T> & BootstrapFlags;
  const logger = createLogger({
    level: flags.logLevel,
    name: spec.name,
    ...(spec.logFields ? { base: spec.logFields(config) } : {}),
    ...(flags.otlpAddress ? { mixin: traceLogFields } : {}),
    ...(proc.destination ? { destination: proc.destination } : {}),
  });
  logUnusedNames(unused, logger);
  const off = spec.disabled?.(config);
  if (off !== undefined) {
    logger.info(off);
    return proc.exit(0);
  }
  for (const warning of spec.warnings?.(config) ?? []) logger.warn(warning);
  const tracing = await startTracing({
    app: spec.name,
    address: flags.otlpAddress,
    insecure: flags.otlpInsecure,
    logger,
  });
  const service = await spec.create(config, {
    logger,
    registry: createMetricsRegistry(),
    tracer: tracing.tracer,
  });
  installShutdown({
    logger,
    drainTimeoutMs: spec.drainTimeoutMs(config),
    // Spans still queued (the drained requests' too) are exported before exit.
    shutdown: () => service.stop().finally(() => tracing.shutdown()),
    process: proc.signals,
    exit: proc.exit,
  });
  proc.signals.on('SIGHUP', () => {
    service.reload().catch((err: unknown) => logger.error({ err: String(err) }, 'reload failed'));
  });
  try {
    await service.start();
  } catch (err) {
    logger.fatal({ err: String(err) }, `${title} failed to start`);
    return proc.exit(1);
  }
  spec.started?.(service);
  logger.info({ paramsFile }, 'ready');
  return service;
}
